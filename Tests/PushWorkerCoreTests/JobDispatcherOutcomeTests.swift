import Foundation
import Testing
@testable import PushWorkerCore

/// Contract section 2 (rows 1–7) through `JobDispatcher.submit`, with the results from `onResult`.
@Suite struct JobDispatcherOutcomeTests {
    /// A dispatcher with `content-update` registered (a noop worker returning newData) and, optionally, a default worker.
    func dispatcher(withDefault: Bool = false, collector: ResultCollector) -> JobDispatcher {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "content-update", worker: NoopWorker(outcome: .newData), name: "noop:content-update")
        if withDefault {
            registry.setDefault(worker: NoopWorker(outcome: WorkerOutcome(.noData, reason: "fromDefault")), name: "fallback")
        }
        return JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
    }

    func record(_ value: [UInt8]?, offset: Int64 = 1, headers: [(name: String, value: [UInt8]?)] = [], key: String? = nil) -> InputRecord {
        InputRecord(source: source(offset), key: key.map { Array($0.utf8) }, value: value, headers: headers, receivedAtMs: WallClock.nowMs())
    }

    @Test("contract section 2 rows 1–4", .timeLimit(.minutes(1)), arguments: ValidationCase.all)
    func row(_ testCase: ValidationCase) async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector: collector)
        let headers: [(name: String, value: [UInt8]?)] = testCase.expiration.map { [("apns-expiration", Array($0.utf8))] } ?? []
        dispatcher.submit([record(testCase.value, headers: headers)])
        #expect(await idle(dispatcher))
        #expect(collector.count == 1)
        let result = try #require(collector.result(offset: 1))
        switch testCase.expected {
        case .rejected(let expectedResult, let expectedReason):
            #expect(result.result.rawValue == expectedResult)
            #expect(result.reason?.rawValue == expectedReason)
            #expect(result.detail?.isEmpty == false)
            #expect(result.worker == nil)
            #expect(result.startedAtMs == nil)
            #expect(result.durationMs == 0)
        case .accepted(let type):
            #expect(type == "content-update")
            #expect(result.result == .newData)
            #expect(result.reason == nil)
            #expect(result.worker == "noop:content-update")
            #expect(result.type == "content-update")
            #expect(result.startedAtMs != nil)
        }
        #expect(result.messageId == "pushes-0-1")
        #expect(result.source == source(1))
        #expect(result.attempt == 1)
    }

    @Test func notSilentAndExpiredResultsKeepThePayloadType() {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector: collector)
        dispatcher.submit([
            record(Array(#"{"aps":{"content-available":0},"type":"content-update"}"#.utf8), offset: 1),
            record(Array(#"{"aps":{"content-available":1},"type":"content-update"}"#.utf8), offset: 2,
                   headers: [("apns-expiration", Array("1000".utf8))]),
            record(Array(#"{"aps":{"content-available":1},"type":"content-update""#.utf8), offset: 3),
        ])
        #expect(collector.result(offset: 1)?.reason?.rawValue == "notSilent")
        #expect(collector.result(offset: 1)?.type == "content-update")
        #expect(collector.result(offset: 2)?.reason?.rawValue == "expired")
        #expect(collector.result(offset: 2)?.type == "content-update")
        #expect(collector.result(offset: 3)?.reason?.rawValue == "invalidPayload")
        #expect(collector.result(offset: 3)?.type == nil)
    }

    @Test func rejectedRecordsAreReportedDuringSubmit() {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector: collector)
        dispatcher.submit([record(nil, offset: 1), record([], offset: 2), record(ValidationCase.tooLargeAndInvalidJSON, offset: 3)])
        #expect(collector.all.map(\.source.offset) == [1, 2, 3])
        #expect(collector.all.map { $0.reason?.rawValue } == ["invalidPayload", "invalidPayload", "payloadTooLarge"])
        #expect(dispatcher.runningCount == 0 && dispatcher.waitingCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func workerReasonsAndDetailsAreCutSoResultsStayProducible() async throws {
        let collector = ResultCollector()
        var registry = WorkerRegistry()
        registry.register(type: "content-update", worker: ClosureWorker { _ in
            .failed(ResultReason(String(repeating: "r", count: 5000)), detail: String(repeating: "é", count: 10_000))
        })
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([record(Payload.silent())])
        #expect(await idle(dispatcher))
        let result = try #require(collector.result(offset: 1))
        #expect(result.reason?.rawValue.utf8.count ?? 0 <= ResultRecord.maxReasonBytes)
        #expect(result.reason?.rawValue.hasSuffix("…") == true)
        #expect(result.detail?.utf8.count ?? 0 <= ResultRecord.maxDetailBytes)
        #expect(result.detail?.hasPrefix("éé") == true && result.detail?.hasSuffix("…") == true, "cut on a character boundary")
        #expect(result.jsonBytes().count < 4096)
        #expect(ResultRecord.truncated("short", toBytes: 256) == "short")
    }

    static let typeCases: [(String, String, String?)] = [
        ("missing type", #"{"aps":{"content-available":1}}"#, nil),
        ("type is a number", #"{"aps":{"content-available":1},"type":7}"#, nil),
        ("type is null", #"{"aps":{"content-available":1},"type":null}"#, nil),
        ("type is an object", #"{"aps":{"content-available":1},"type":{"name":"content-update"}}"#, nil),
        ("unregistered type", #"{"aps":{"content-available":1},"type":"weather-update"}"#, "weather-update"),
    ]

    @Test("row 5: no worker and no default worker", .timeLimit(.minutes(1)), arguments: typeCases)
    func noWorker(_ name: String, _ json: String, _ type: String?) async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(withDefault: false, collector: collector)
        dispatcher.submit([record(Array(json.utf8))])
        #expect(await idle(dispatcher))
        let result = try #require(collector.result(offset: 1))
        #expect(result.result.rawValue == "noData")
        #expect(result.reason?.rawValue == "noWorker")
        #expect(result.detail?.isEmpty == false)
        #expect(result.worker == nil)
        #expect(result.type == type)
        #expect(result.startedAtMs == nil)
    }

    @Test("row 5: routed to the default worker", .timeLimit(.minutes(1)), arguments: typeCases)
    func defaultWorker(_ name: String, _ json: String, _ type: String?) async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(withDefault: true, collector: collector)
        dispatcher.submit([record(Array(json.utf8))])
        #expect(await idle(dispatcher))
        let result = try #require(collector.result(offset: 1))
        #expect(result.result.rawValue == "noData")
        #expect(result.reason?.rawValue == "fromDefault")
        #expect(result.worker == "fallback")
        #expect(result.type == type)
        #expect(result.startedAtMs != nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func registeredTypeWinsOverTheDefaultWorker() async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(withDefault: true, collector: collector)
        dispatcher.submit([record(Payload.silent(type: "content-update"))])
        #expect(await idle(dispatcher))
        let result = try #require(collector.result(offset: 1))
        #expect(result.worker == "noop:content-update")
        #expect(result.result == .newData)
    }

    @Test(.timeLimit(.minutes(1)))
    func defaultWorkerDoesNotBypassTheEarlierRows() async {
        let collector = ResultCollector()
        let dispatcher = dispatcher(withDefault: true, collector: collector)
        dispatcher.submit([
            record(Array(#"{"aps":{"content-available":0}}"#.utf8), offset: 1),
            record(Array("[1]".utf8), offset: 2),
            record(Payload.silent(type: nil), offset: 3, headers: [("apns-expiration", Array(ValidationCase.pastExpiration.utf8))]),
        ])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 1)?.reason?.rawValue == "notSilent")
        #expect(collector.result(offset: 2)?.reason?.rawValue == "invalidPayload")
        #expect(collector.result(offset: 3)?.reason?.rawValue == "expired")
        #expect(collector.all.allSatisfy { $0.worker == nil })
    }

    @Test(.timeLimit(.minutes(1)))
    func workerOutcomeThrowAndTimeoutRows() async throws {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom: upstream 503" } }
        let collector = ResultCollector()
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "outcome", worker: ClosureWorker { _ in WorkerOutcome(.failed, reason: "quota", detail: "HTTP 429") })
        registry.register(type: "throws", worker: ClosureWorker { _ in throw Boom() })
        registry.register(type: "slow", worker: NoopWorker(outcome: .newData, delay: .seconds(10)), budget: .milliseconds(150))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([
            record(Payload.silent(type: "outcome"), offset: 1),
            record(Payload.silent(type: "throws"), offset: 2),
            record(Payload.silent(type: "slow"), offset: 3),
        ])
        #expect(await idle(dispatcher))
        let outcome = try #require(collector.result(offset: 1))
        #expect(outcome.result == .failed && outcome.reason?.rawValue == "quota" && outcome.detail == "HTTP 429")
        #expect(outcome.worker == "outcome")
        let thrown = try #require(collector.result(offset: 2))
        #expect(thrown.result == .failed && thrown.reason?.rawValue == "workerError")
        #expect(thrown.detail?.contains("boom: upstream 503") == true)
        let slow = try #require(collector.result(offset: 3))
        #expect(slow.result == .failed && slow.reason?.rawValue == "timeout")
        #expect(slow.durationMs == 150)
    }

    @Test(.timeLimit(.minutes(1)))
    func resultCarriesTheRecordsIdentity() async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector: collector)
        let receivedAtMs = WallClock.nowMs() - 50
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let headers: [(name: String, value: [UInt8]?)] = [("apns-id", Array("apns-abc".utf8)), ("traceparent", Array(traceparent.utf8))]
        dispatcher.submit([
            InputRecord(source: source(5, partition: 2), key: Array("device-9".utf8), value: Payload.silent(), headers: headers, receivedAtMs: receivedAtMs),
            InputRecord(source: source(6, partition: 2), key: Array("device-9".utf8), value: [], headers: headers, receivedAtMs: receivedAtMs),
            InputRecord(source: source(7, partition: 2), value: Payload.silent(), receivedAtMs: receivedAtMs),
        ])
        #expect(await idle(dispatcher))
        for offset: Int64 in [5, 6] {
            let result = try #require(collector.result(offset: offset))
            #expect(result.messageId == "apns-abc")
            #expect(result.hasApnsId)
            #expect(result.traceparent == traceparent)
            #expect(result.key == Array("device-9".utf8))
            #expect(result.receivedAtMs == receivedAtMs)
            #expect(result.source == source(offset, partition: 2))
            #expect(result.finishedAtMs >= receivedAtMs)
        }
        let plain = try #require(collector.result(offset: 7))
        #expect(plain.messageId == "pushes-2-7")
        #expect(!plain.hasApnsId)
        #expect(plain.traceparent == nil)
        #expect(plain.key == nil)
        let ran = try #require(collector.result(offset: 5))
        #expect(try #require(ran.startedAtMs) >= receivedAtMs)
        #expect(ran.finishedAtMs >= ran.startedAtMs!)
    }

    @Test(.timeLimit(.minutes(1)))
    func workerSeesTheJobsDataAndHeaders() async throws {
        let collector = ResultCollector()
        let seen = Locked<[String]>([])
        var registry = WorkerRegistry()
        registry.register(type: "content-update", worker: ClosureWorker { job in
            seen.withLock {
                $0 = [job.messageId, job.type ?? "nil", job.object["contentId"]?.stringValue ?? "nil",
                      job.header("apns-priority") ?? "nil", job.traceparent ?? "nil", String(decoding: job.key ?? [], as: UTF8.self)]
            }
            return .newData
        })
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 1, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([InputRecord(
            source: source(3), key: Array("k".utf8), value: Payload.silent(extra: #","contentId":"article-123""#),
            headers: [("apns-priority", Array("5".utf8)), ("traceparent", Array("00-abc-def-01".utf8))], receivedAtMs: WallClock.nowMs())])
        #expect(await idle(dispatcher))
        #expect(seen.value == ["pushes-0-3", "content-update", "article-123", "5", "00-abc-def-01", "k"])
    }

    @Test(.timeLimit(.minutes(1)))
    func oneResultPerRecord() async {
        let collector = ResultCollector()
        let dispatcher = dispatcher(withDefault: false, collector: collector)
        let values: [[UInt8]?] = [Payload.silent(), nil, [], Payload.silent(type: "unknown"), Array("{}".utf8), Payload.silent(ofSize: 5000)]
        let records = (0..<60).map { record(values[$0 % values.count], offset: Int64($0), key: $0 % 3 == 0 ? "k\($0 % 4)" : nil) }
        dispatcher.submit(records)
        #expect(await idle(dispatcher))
        #expect(collector.all.map(\.source.offset).sorted() == Array(0..<60))
    }
}
