import Foundation
import Synchronization
import Testing
@testable import PushWorkerCore

/// Typed payloads: the worker receives a decoded value; a payload that does not decode never reaches it.
@Suite struct TypedWorkerTests {
    struct ContentUpdate: Decodable, Sendable {
        struct Options: Decodable, Sendable { let force: Bool }
        let contentId: String
        let revision: Int?
        let options: Options?
    }

    final class Calls: Sendable {
        let ids = Mutex<[String]>([])
    }

    struct ContentUpdateWorker: TypedWorker {
        let calls: Calls
        func perform(_ payload: ContentUpdate, job: Job) async throws -> WorkerOutcome {
            calls.ids.withLock { $0.append(payload.contentId) }
            return payload.revision == nil ? WorkerOutcome(.noData, reason: "noRevision") : .newData
        }
    }

    func run(_ json: String, calls: Calls) async -> ExecutionReport {
        let job = Job(messageId: "m", type: "content-update", value: Array(json.utf8), source: RecordSource(topic: "t", partition: 0, offset: 0))
        return await BudgetedExecutor().run(job, on: RegisteredWorker(name: "typed", worker: ContentUpdateWorker(calls: calls), budget: .seconds(60)))
    }

    @Test(.timeLimit(.minutes(1))) func decodedPayloadReachesTheWorker() async {
        let calls = Calls()
        let report = await run(#"{"aps":{"content-available":1},"type":"content-update","contentId":"article-1","revision":3}"#, calls: calls)
        #expect(report.outcome == .newData)
        let optional = await run(#"{"aps":{"content-available":1},"type":"content-update","contentId":"article-2"}"#, calls: calls)
        #expect(optional.outcome == WorkerOutcome(.noData, reason: "noRevision"))
        #expect(calls.ids.withLock { $0 } == ["article-1", "article-2"])
    }

    @Test("payloads that do not decode are invalidPayload and never run the worker", .timeLimit(.minutes(1)), arguments: [
        (#"{"aps":{"content-available":1},"type":"content-update"}"#, #"missing key "contentId""#),
        (#"{"aps":{"content-available":1},"type":"content-update","contentId":42}"#, "contentId is not String"),
        (#"{"aps":{"content-available":1},"type":"content-update","contentId":null}"#, "contentId is null"),
        (#"{"aps":{"content-available":1},"type":"content-update","contentId":"a","options":{"force":"yes"}}"#, "options.force is not Bool"),
    ])
    func undecodablePayloads(_ json: String, _ expected: String) async {
        let calls = Calls()
        let report = await run(json, calls: calls)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .invalidPayload)
        #expect(report.outcome.detail?.contains(expected) == true, "\(report.outcome.detail ?? "")")
        #expect(report.outcome.detail?.contains("ContentUpdate") == true)
        #expect(calls.ids.withLock { $0 }.isEmpty)
    }
}
