import Testing
@testable import PushWorkerCore

/// Routing by `type` (contract section 2, row 5).
@Suite struct WorkerRegistryTests {
    @Test func routesByTypeThenDefault() {
        var registry = WorkerRegistry(defaultBudget: .seconds(12))
        #expect(registry.route(type: "a") == nil)
        #expect(registry.route(type: nil) == nil)
        registry.register(type: "a", worker: NoopWorker(), budget: .seconds(3))
        registry.register(type: "b", worker: NoopWorker(), name: "exec:b")
        #expect(registry.route(type: "a")?.name == "a")
        #expect(registry.route(type: "a")?.budget == .seconds(3))
        #expect(registry.route(type: "b")?.name == "exec:b")
        #expect(registry.route(type: "b")?.budget == .seconds(12))
        #expect(registry.route(type: "c") == nil)
        #expect(registry.route(type: nil) == nil)
        #expect(registry.types == ["a", "b"])

        registry.setDefault(worker: NoopWorker(), budget: .seconds(40))
        #expect(registry.route(type: "c")?.name == "default")
        #expect(registry.route(type: nil)?.name == "default")
        #expect(registry.route(type: "A")?.name == "default")
        #expect(registry.route(type: "a")?.name == "a")
        #expect(registry.largestBudget == .seconds(40))
    }

    /// A Swift registration's budget is clamped to the file's range, so a huge one cannot overflow the job's
    /// UNIX-ms deadline or the deadline timer (it trapped before), and a zero one still runs the worker.
    @Test func budgetsOutsideTheFileRangeAreClampedAndRun() async {
        var registry = WorkerRegistry()
        registry.register(type: "huge", worker: NoopWorker(), budget: .seconds(Int64.max))
        registry.register(type: "zero", worker: NoopWorker(), budget: .zero)
        #expect(registry.route(type: "huge")?.budget == RegisteredWorker.maxBudget)
        #expect(registry.route(type: "zero")?.budget == .milliseconds(1))
        #expect(registry.largestBudget == .milliseconds(2_147_483_647))
        guard let huge = registry.route(type: "huge") else { return }
        let job = Job(messageId: "m", type: "huge", value: Array(#"{"aps":{"content-available":1}}"#.utf8),
                      source: RecordSource(topic: "t", partition: 0, offset: 0))
        let report = await BudgetedExecutor().run(job, on: huge)
        #expect(report.outcome == .noData)
        #expect(!report.timedOut)
        #expect(WallClock.wallMs(at: .now.advanced(by: .seconds(Int64.max))) == .max)
    }

    @Test func reRegisteringReplaces() {
        var registry = WorkerRegistry()
        registry.register(type: "a", worker: NoopWorker(), name: "first")
        registry.register(type: "a", worker: NoopWorker(), name: "second")
        #expect(registry.route(type: "a")?.name == "second")
        #expect(registry.types == ["a"])
    }

    @Test func defaultBudgetIs30Seconds() {
        var registry = WorkerRegistry()
        #expect(registry.defaultBudget == .seconds(30))
        #expect(registry.largestBudget == .seconds(30))
        registry.register(type: "a", worker: NoopWorker())
        #expect(registry.route(type: "a")?.budget == .seconds(30))
        registry.register(type: "b", worker: NoopWorker(), budget: .seconds(90))
        #expect(registry.largestBudget == .seconds(90))
    }
}
