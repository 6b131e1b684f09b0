import Foundation
import PushWorkerAPI

/// Calls a worker directly, under a budget, with a hand-built job: the quickest test of a worker, without
/// Kafka.
/// ```swift
/// let report = await WorkerProbe.run(ContentUpdateWorker(), payload: #"{"aps":{"content-available":1},"contentId":"a-1"}"#,
///                                    budget: .milliseconds(500))
/// #expect(report.outcome == .newData)
/// ```
public enum WorkerProbe {
    /// Builds a job as the service would for a record of `payload` and runs `worker` on it under `budget`
    /// (with cancellation and the `timeout` outcome at the deadline, as in the service).
    /// - Parameters:
    ///   - payload: the record value (a JSON object).
    ///   - type: the job's `type` (default: the payload's string `type`, if any).
    ///   - key: the ordering key, if any.
    ///   - headers: record headers (e.g. `apns-id`, `traceparent`).
    ///   - budget: the worker's budget (default 30 s).
    /// - Returns: the outcome with its timings.
    public static func run(
        _ worker: any Worker,
        payload: String,
        type: String? = nil,
        key: String? = nil,
        headers: [String: String] = [:],
        budget: Duration = .seconds(30)
    ) async -> ExecutionReport {
        let value = Array(payload.utf8)
        let payloadType = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)))?["type"]?.stringValue
        let job = Job(
            messageId: headers["apns-id"] ?? "probe-0-0", type: type ?? payloadType, value: value,
            key: key.map { Array($0.utf8) },
            headers: RecordHeaders(headers.sorted { $0.key < $1.key }.map { RecordHeader(name: $0.key, string: $0.value) }),
            source: RecordSource(topic: "probe", partition: 0, offset: 0),
            traceparent: headers["traceparent"])
        return await BudgetedExecutor().run(job, on: RegisteredWorker(name: "probe", worker: worker, budget: budget))
    }
}
