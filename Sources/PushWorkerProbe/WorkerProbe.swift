import Foundation
import PushWorkerAPI

/// Calls a worker directly, under a budget, with a hand-built job: the quickest test of a worker, without
/// Kafka.
/// ```swift
/// let report = await WorkerProbe.run(ContentUpdateWorker(), payload: #"{"aps":{"content-available":1},"contentId":"a-1"}"#,
///                                    budget: .milliseconds(500))
/// #expect(report.outcome == .newData)
/// ```
/// A ``ConfigurableWorker`` is built from the JSON5 text of its settings section, decoded as the service
/// decodes the config file's `workerSettings`, with ``makeWorker(_:settings:section:)``.
public enum WorkerProbe {
    /// Builds a ``ConfigurableWorker`` from the JSON5 text of its settings section, decoded strictly as the
    /// service decodes `workerSettings.<section>` of the config file:
    /// ```swift
    /// let worker = try WorkerProbe.makeWorker(CachePurgeWorker.self, settings: #"{ cacheURL: "http://127.0.0.1:8080" }"#)
    /// ```
    /// - Parameters:
    ///   - settings: the section's JSON5 text, an object (default `{}`).
    ///   - section: the section's name in error messages (default `probe`: `workerSettings.probe.<key>`).
    /// - Throws: ``WorkerSettingsError`` (`syntax` for text that is not a JSON5 object; otherwise as the
    ///   service would refuse the section); whatever the worker's `init(settings:)` throws.
    public static func makeWorker<W: ConfigurableWorker>(_ workerType: W.Type, settings: String = "{}", section: String = "probe") throws -> W {
        let value = try WorkerSettings.parseJSON5(settings, key: WorkerSettings.path(section))
        let decoded = try WorkerSettings([section: value]).decode(W.Settings.self, section: section)
        return try W(settings: decoded)
    }

    /// Builds a job as the service would for a record of `payload` and runs `worker` on it under `budget`
    /// (with cancellation and the `timeout` outcome at the deadline, as in the service).
    /// - Parameters:
    ///   - payload: the record value (a JSON object).
    ///   - type: the job's `type` (default: the payload's string `type`, if any).
    ///   - key: the ordering key, if any.
    ///   - headers: record headers as text, name to value (e.g. `apns-id`, `traceparent`), given to the job
    ///     in name order; for duplicates, their order, null or non-UTF-8 values use
    ///     ``run(_:payload:type:key:recordHeaders:budget:)``.
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
        await run(worker, payload: payload, type: type, key: key,
                  recordHeaders: RecordHeaders(headers.sorted { $0.key < $1.key }.map { RecordHeader(name: $0.key, string: $0.value) }),
                  budget: budget)
    }

    /// Builds a job as the service would for a record of `payload` with exactly these headers (order,
    /// duplicates, null and non-UTF-8 values kept) and runs `worker` on it under `budget`.
    /// ```swift
    /// let report = await WorkerProbe.run(worker, payload: push, recordHeaders: [
    ///     RecordHeader(name: "x-tenant", string: "a"), RecordHeader(name: "x-tenant", string: "b"),
    ///     RecordHeader(name: "x-blob", value: [0xFF, 0x00]),
    /// ])
    /// ```
    /// - Parameters:
    ///   - payload: the record value (a JSON object).
    ///   - type: the job's `type` (default: the payload's string `type`, if any).
    ///   - key: the ordering key, if any.
    ///   - recordHeaders: the record headers. The first `apns-id` that is non-empty UTF-8 is the job's
    ///     `messageId` (else `probe-0-0`); the first `traceparent`'s bytes are its `traceparentHeader`.
    ///   - budget: the worker's budget (default 30 s).
    /// - Returns: the outcome with its timings.
    public static func run(
        _ worker: any Worker,
        payload: String,
        type: String? = nil,
        key: String? = nil,
        recordHeaders: RecordHeaders,
        budget: Duration = .seconds(30)
    ) async -> ExecutionReport {
        let value = Array(payload.utf8)
        let payloadType = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)))?["type"]?.stringValue
        let messageId = recordHeaders.string(named: "apns-id").flatMap { $0.isEmpty ? nil : $0 } ?? "probe-0-0"
        var job = Job(
            messageId: messageId, type: type ?? payloadType, value: value,
            key: key.map { Array($0.utf8) }, headers: recordHeaders,
            source: RecordSource(topic: "probe", partition: 0, offset: 0))
        job.traceparentHeader = recordHeaders.bytes(named: "traceparent")
        return await BudgetedExecutor().run(job, on: RegisteredWorker(name: "probe", worker: worker, budget: budget))
    }
}
