import CRdKafka
import Foundation
import Synchronization

/// A librdkafka producer with per-record delivery acknowledgements surfaced to Swift.
///
/// A dedicated thread (never the cooperative pool) runs `rd_kafka_poll`; the delivery reports each call
/// serves are handed over in one batch to `onDelivery` (for records produced with
/// ``produce(_:token:)``) or resume the awaiting ``send(_:)``.
///
/// Call ``close(timeoutMs:)`` before dropping the last reference: it flushes outstanding records and stops
/// the poll thread.
public final class KafkaProducer: Sendable {
    /// The client (internal: the transactional calls in `KafkaProducer+Transactions.swift` use its handle).
    let client: KafkaClient
    private let reports: DeliveryReportBuffer
    private let state: Mutex<State>
    private let onDelivery: (@Sendable ([KafkaDeliveryReport]) -> Void)?
    /// When the poll thread last came back from `rd_kafka_poll` (monotonic nanoseconds), 0 once closed.
    private let lastPollNs = Atomic<Int64>(MonotonicClock.nowNs())

    private struct State {
        var nextSendToken: UInt64 = Self.sendTokenBit
        var waiting: [UInt64: CheckedContinuation<Result<KafkaDeliveryReport, KafkaError>, Never>] = [:]
        var phase: Phase = .running
        static let sendTokenBit: UInt64 = 1 << 63
    }

    private enum Phase {
        case running
        case closing(timeoutMs: Int32, CheckedContinuation<Int, Never>)
        case closed
    }

    /// Tokens at or above this value are reserved for ``send(_:)``.
    public static let maximumToken: UInt64 = (1 << 63) - 1

    /// Creates a producer and starts its poll thread.
    ///
    /// - Parameters:
    ///   - configuration: librdkafka properties (`bootstrap.servers` at least), passed through unchanged.
    ///   - logHandler: receives librdkafka's logs and errors.
    ///   - onDelivery: receives the delivery reports of records produced with ``produce(_:token:)``, in
    ///     batches, on the poll thread. Keep it short.
    ///   - onStatistics: receives librdkafka's statistics every `statistics.interval.ms` (when set above 0),
    ///     on the poll thread. Keep it short.
    /// - Throws: ``KafkaError`` if a property is invalid or the client cannot be created.
    public init(
        configuration: KafkaConfiguration,
        logHandler: KafkaLogHandler? = nil,
        onDelivery: (@Sendable ([KafkaDeliveryReport]) -> Void)? = nil,
        onStatistics: KafkaStatisticsHandler? = nil
    ) throws {
        let reports = DeliveryReportBuffer()
        self.reports = reports
        self.onDelivery = onDelivery
        self.state = Mutex(State())
        let callbacks = KafkaCallbacks(log: logHandler, delivery: { message in
            let m = message.pointee
            let token = UInt64(UInt(bitPattern: m._private))
            let rkt = m.rkt
            reports.state.withLock { state in
                // One topic name per topic handle, not one String per report.
                let topic = state.topicNames.name(of: rkt)
                let error = m.err == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError(.deliveryFailed, "delivery to \(topic) failed", m.err)
                state.reports.append(KafkaDeliveryReport(
                    token: token,
                    topicPartition: TopicPartition(topic: topic, partition: m.partition),
                    offset: m.offset,
                    error: error
                ))
            }
        }, statistics: onStatistics)
        self.client = try KafkaClient(kind: .producer, configuration: configuration, callbacks: callbacks)
        let thread = Thread { [self] in self.pollLoop() }
        thread.name = "pushworker-producer-poll"
        thread.start()
    }

    /// Enqueues a record without waiting; its delivery report reaches `onDelivery` with `token`.
    ///
    /// - Parameter token: the caller's identifier for this record, at most ``maximumToken``.
    /// - Throws: ``KafkaError/Code/queueFull`` when librdkafka's queue is full (retry after deliveries),
    ///   ``KafkaError/Code/closed`` after ``close(timeoutMs:)``, or another ``KafkaError`` (its
    ///   ``KafkaError/produceFailure`` says whether the record can ever be produced as it is).
    public func produce(_ record: KafkaOutgoingRecord, token: UInt64) throws(KafkaError) {
        try enqueue(record, opaque: UnsafeMutableRawPointer(bitPattern: UInt(token & Self.maximumToken)))
    }

    /// Produces a record and waits for the broker's acknowledgement (or librdkafka's final failure after
    /// its retries, bounded by `message.timeout.ms`). Waits and retries while the local queue is full.
    ///
    /// - Returns: the delivery report; its `error` is set if the record was not delivered.
    /// - Throws: ``KafkaError`` if the record cannot be enqueued at all (e.g. the producer is closed).
    public func send(_ record: KafkaOutgoingRecord) async throws -> KafkaDeliveryReport {
        while true {
            let token = state.withLock { state -> UInt64 in
                defer { state.nextSendToken &+= 1 }
                return state.nextSendToken
            }
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<KafkaDeliveryReport, KafkaError>, Never>) in
                // Registered before enqueueing, so the report (served on the poll thread) always finds it.
                state.withLock { $0.waiting[token] = continuation }
                do throws(KafkaError) {
                    try enqueue(record, opaque: UnsafeMutableRawPointer(bitPattern: UInt(token)))
                } catch {
                    let removed = state.withLock { $0.waiting.removeValue(forKey: token) }
                    removed?.resume(returning: .failure(error))
                }
            }
            switch outcome {
            case .success(let report):
                return report
            case .failure(let error) where error.code == .queueFull:
                try await Task.sleep(for: .milliseconds(5))
            case .failure(let error):
                throw error
            }
        }
    }

    /// How long ago the poll thread last finished a round (`rd_kafka_poll` for up to 100 ms, then handing
    /// delivery reports to `onDelivery`), or `nil` once the producer is closed. A value far above 100 ms
    /// means the thread is stuck (e.g. in `onDelivery`); health checks read it.
    public var sinceLastPoll: Duration? {
        let last = lastPollNs.load(ordering: .relaxed)
        guard last != 0 else { return nil }
        return .nanoseconds(max(0, MonotonicClock.nowNs() - last))
    }

    /// Makes `topic` known to the producer with its partitions and leaders, from the cluster's metadata
    /// (`rd_kafka_topic_new`, then `rd_kafka_metadata` for that topic): the first record produced to it
    /// then goes out at once. Without it, librdkafka 2.0.2 learns a topic first named by a produce call
    /// only at its next topic scan, once a second: records produced meanwhile wait in its queue, and so do
    /// their delivery reports (seen: 2 191 results held 0.8 s after a service's first one). Blocking: call
    /// on a dedicated thread.
    /// - Returns: the topic's partition count.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails or times out, or the topic does not exist
    ///   or is refused; records produced to it later are handled as usual.
    @discardableResult
    public func prepareTopic(_ topic: String, timeoutMs: Int32) throws -> Int {
        try client.partitionCount(topic: topic, timeoutMs: timeoutMs)
    }

    /// The cluster id the brokers report (`rd_kafka_clusterid`: from a Metadata request, waiting for the
    /// first answer up to `timeoutMs`), or `nil` when no broker answered in time or they report none.
    /// librdkafka's mock cluster (``EmbeddedKafkaCluster``) reports `mockCluster<hex>`. Blocking: call on a
    /// dedicated thread.
    public func clusterId(timeoutMs: Int32) -> String? {
        client.clusterId(timeoutMs: timeoutMs)
    }

    /// The number of records and requests librdkafka still holds (`rd_kafka_outq_len`).
    public var outstanding: Int { Int(rd_kafka_outq_len(client.handle)) }

    /// Waits until every produced record has a delivery report or `timeoutMs` passes.
    /// - Returns: the number of records still outstanding (0 when all were reported).
    public func flush(timeoutMs: Int) async -> Int {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        while outstanding > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return outstanding
    }

    /// Flushes outstanding records (`rd_kafka_flush`, at most `timeoutMs`), delivers their reports and stops
    /// the poll thread. Later ``produce(_:token:)`` calls throw ``KafkaError/Code/closed``.
    /// - Returns: the number of records that were still not reported when the timeout passed.
    @discardableResult
    public func close(timeoutMs: Int32 = 10_000) async -> Int {
        await withCheckedContinuation { continuation in
            let alreadyClosed = state.withLock { state -> Bool in
                guard case .running = state.phase else { return true }
                state.phase = .closing(timeoutMs: timeoutMs, continuation)
                return false
            }
            if alreadyClosed { continuation.resume(returning: 0) }
        }
    }

    private func enqueue(_ record: KafkaOutgoingRecord, opaque: UnsafeMutableRawPointer?) throws(KafkaError) {
        if case .closed = state.withLock({ $0.phase }) {
            throw KafkaError(.closed, "the producer is closed")
        }
        let error: OpaquePointer? = record.topic.withCString { topic in
            withOptionalBytes(record.key) { key in
                withOptionalBytes(record.value) { value in
                    var vus: [rd_kafka_vu_t] = []
                    vus.reserveCapacity(6 + record.headers.count)
                    var vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_TOPIC
                    vu.u.cstr = topic
                    vus.append(vu)
                    if let partition = record.partition {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_PARTITION
                        vu.u.i32 = partition
                        vus.append(vu)
                    }
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    vu.u.i = RD_KAFKA_MSG_F_COPY
                    vus.append(vu)
                    if let key {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_KEY
                        vu.u.mem.ptr = UnsafeMutableRawPointer(mutating: key.baseAddress)
                        vu.u.mem.size = key.count
                        vus.append(vu)
                    }
                    if let value {
                        vu = rd_kafka_vu_t()
                        vu.vtype = RD_KAFKA_VTYPE_VALUE
                        vu.u.mem.ptr = UnsafeMutableRawPointer(mutating: value.baseAddress)
                        vu.u.mem.size = value.count
                        vus.append(vu)
                    }
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_OPAQUE
                    vu.u.ptr = opaque
                    vus.append(vu)
                    if record.headers.isEmpty {
                        return rd_kafka_produceva(client.handle, vus, vus.count)
                    }
                    // Header names and values are copied by librdkafka during the call.
                    guard let headers = rd_kafka_headers_new(record.headers.count) else {
                        return rd_kafka_produceva(client.handle, vus, vus.count)
                    }
                    for header in record.headers {
                        if let bytes = header.value {
                            bytes.withUnsafeBytes { raw in
                                _ = rd_kafka_header_add(headers, header.name, -1, raw.baseAddress, raw.count)
                            }
                        } else {
                            _ = rd_kafka_header_add(headers, header.name, -1, nil, 0)
                        }
                    }
                    vu = rd_kafka_vu_t()
                    vu.vtype = RD_KAFKA_VTYPE_HEADERS
                    vu.u.headers = headers
                    vus.append(vu)
                    let error = rd_kafka_produceva(client.handle, vus, vus.count)
                    // On success librdkafka owns the headers; on failure they are still ours.
                    if error != nil { rd_kafka_headers_destroy(headers) }
                    return error
                }
            }
        }
        if let error {
            let code = rd_kafka_error_code(error)
            let text = String(cString: rd_kafka_error_string(error))  // NUL-safe: librdkafka's own text (names, errors, versions)
            let retriable = rd_kafka_error_is_retriable(error) != 0
            rd_kafka_error_destroy(error)
            if code == RD_KAFKA_RESP_ERR__QUEUE_FULL {
                throw KafkaError(.queueFull, "producer queue full (queue.buffering.max.messages)", rdKafkaError: code.rawValue, isRetriable: true)
            }
            let name = String(cString: rd_kafka_err2name(code))  // NUL-safe: librdkafka's own text (names, errors, versions)
            throw KafkaError(.deliveryFailed, "produce to \(record.topic) failed: \(text) (\(name))", rdKafkaError: code.rawValue, isRetriable: retriable)
        }
    }

    private func pollLoop() {
        while true {
            let phase = state.withLock { $0.phase }
            switch phase {
            case .running:
                rd_kafka_poll(client.handle, 100)
                dispatchReports()
                lastPollNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
            case .closing(let timeoutMs, let continuation):
                rd_kafka_flush(client.handle, Int32(timeoutMs))
                dispatchReports()
                let left = Int(rd_kafka_outq_len(client.handle))
                let abandoned = state.withLock { state in
                    state.phase = .closed
                    defer { state.waiting.removeAll() }
                    return Array(state.waiting.values)
                }
                for waiter in abandoned {
                    waiter.resume(returning: .failure(KafkaError(.timedOut, "the producer closed before the record was acknowledged")))
                }
                lastPollNs.store(0, ordering: .relaxed)
                continuation.resume(returning: left)
                return
            case .closed:
                return
            }
        }
    }

    private func dispatchReports() {
        let batch = reports.state.withLock { state -> [KafkaDeliveryReport] in
            guard !state.reports.isEmpty else { return [] }
            defer { state.reports.removeAll(keepingCapacity: true) }
            return state.reports
        }
        guard !batch.isEmpty else { return }
        var forHandler: [KafkaDeliveryReport] = []
        forHandler.reserveCapacity(batch.count)
        for report in batch {
            if report.token >= State.sendTokenBit {
                let continuation = state.withLock { $0.waiting.removeValue(forKey: report.token) }
                continuation?.resume(returning: .success(report))
            } else {
                forHandler.append(report)
            }
        }
        if !forHandler.isEmpty { onDelivery?(forHandler) }
    }
}

/// Calls `body` with the bytes of `bytes`, or `nil` when `bytes` is `nil`.
@inline(__always)
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}
