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
