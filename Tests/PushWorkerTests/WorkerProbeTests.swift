import PushWorkerCore
import PushWorkerTesting
import Testing

/// A worker whose outcome comes from its settings.
struct SettledWorker: ConfigurableWorker {
    struct Settings: Decodable, Sendable {
        var outcome: BackgroundFetchResult
        var delay: Duration?
    }
    let settings: Settings
    init(settings: Settings) { self.settings = settings }
    func perform(_ job: Job) async throws -> WorkerOutcome {
        if let delay = settings.delay { try await Task.sleep(for: delay) }
        return WorkerOutcome(settings.outcome)
    }
}

/// The testing kit's direct call: a worker, a hand-built job, a short budget.
@Suite(.timeLimit(.minutes(1)))
struct WorkerProbeTests {
    @Test func runsTheWorkerWithTheJobTheServiceWouldBuild() async {
        let report = await WorkerProbe.run(ClosureWorker { job in
            #expect(job.type == "content-update")
            #expect(job.messageId == "m-1")
            #expect(job.traceparent == "00-abc-def-01")
            return job.object["contentId"]?.stringValue == "a-1" ? .newData : .noData
        }, payload: #"{"aps":{"content-available":1},"type":"content-update","contentId":"a-1"}"#,
           headers: ["apns-id": "m-1", "traceparent": "00-abc-def-01"])
        #expect(report.outcome == .newData)
    }

    @Test func recordHeadersReachTheJobExactly() async {
        let blob: [UInt8] = [0xFF, 0x00, 0x41]
        let report = await WorkerProbe.run(ClosureWorker { job in
            #expect(job.messageId == "m-2")
            #expect(job.headers.values(named: "x-tenant") == [Array("b".utf8), Array("a".utf8)])
            #expect(job.headers.bytes(named: "x-blob") == blob)
            #expect(job.headers["x-null"] != nil && job.headers.bytes(named: "x-null") == nil)
            #expect(job.traceContext?.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
            return .newData
        }, payload: #"{"aps":{"content-available":1}}"#, recordHeaders: [
            RecordHeader(name: "x-tenant", string: "b"), RecordHeader(name: "apns-id", string: "m-2"),
            RecordHeader(name: "x-tenant", string: "a"), RecordHeader(name: "x-blob", value: blob),
            RecordHeader(name: "x-null", value: nil),
            RecordHeader(name: "traceparent", string: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ])
        #expect(report.outcome == .newData)
    }

    @Test func aShortBudgetTimesOut() async {
        let report = await WorkerProbe.run(NoopWorker(outcome: .newData, delay: .seconds(5)),
                                           payload: #"{"aps":{"content-available":1}}"#, budget: .milliseconds(100))
        #expect(report.outcome.reason == .timeout)
        #expect(report.timedOut)
    }

    @Test func aConfigurableWorkerIsBuiltFromJSON5SettingsAsTheServiceWould() async throws {
        let worker = try WorkerProbe.makeWorker(SettledWorker.self, settings: #"{ outcome: "newData", delay: 10, }"#)
        #expect(worker.settings.delay == .milliseconds(10))
        let report = await WorkerProbe.run(worker, payload: #"{"aps":{"content-available":1}}"#)
        #expect(report.outcome == .newData)

        do {
            _ = try WorkerProbe.makeWorker(SettledWorker.self, settings: #"{ outcome: "newData", delayMs: 10 }"#, section: "settled")
            Issue.record("a misspelt key was taken")
        } catch let error as WorkerSettingsError {
            #expect(error.description == "config key 'workerSettings.settled.delayMs': is not a setting of SettledWorker.Settings; known: delay, outcome")
        }
        #expect(throws: WorkerSettingsError.self) { try WorkerProbe.makeWorker(SettledWorker.self, settings: "[]") }
        #expect(throws: WorkerSettingsError.self) { try WorkerProbe.makeWorker(SettledWorker.self, settings: "{ outcome: ") }
        #expect(throws: WorkerSettingsError.self) { try WorkerProbe.makeWorker(SettledWorker.self) }
    }
}
