import CRdKafka
import Foundation
import Synchronization

/// Restarts the fetching that librdkafka before 2.2.0 leaves stopped for up to a second once the consumer
/// queue is full, as soon as the queue has room again.
///
/// librdkafka stops fetching while the consumer queue holds `queued.min.messages` records (default
/// 100 000) or `queued.max.messages.kbytes` of record values (default 64 MiB). Before 2.2.0 it looks at a
/// stopped partition again only when the broker thread of the partition's leader next wakes: for a request
/// to send, for network I/O, or after its idle wait of 1 s (`rd_kafka_broker_consumer_serve`; librdkafka
/// 2.2.0 made the wait `fetch.queue.backoff.ms`, default 1000 ms, and checks it before the queue). A
/// consumer that takes the queued records faster than that then sits idle: reading 200 000 waiting records
/// at about 200 000 a second, half a second of work and up to a second of waiting for the second half.
///
/// This watches the queue's length (`rd_kafka_queue_length`) every few records taken. Once the queue has
/// come within one sampling interval of the point where fetching stops, and has then fallen back below it,
/// it asks the leaders of the assigned partitions for their end offsets (`rd_kafka_offsets_for_times` with
/// `RD_KAFKA_OFFSET_END`), on a thread of its own. That request is queued on each leader's broker thread,
/// which wakes, finds room in the queue and fetches again. One request is on its way at a time; the looks go
/// on meanwhile, and when one of them finds the queue at the stop point again (the wake-up's fetch filled
/// it), the next fall below it sends the next request (``Watch``). Nothing is sent while the queue stays below the
/// stop point, so a consumer that keeps up (the usual case) sends nothing; one that is catching up sends one
/// ListOffsets request per leader each time the queue fills, about once per `queued.min.messages` records.
/// The answers are not used. A consumer that fetches from a follower (KIP-392: `client.rack`, with the
/// brokers' `replica.selector.class`) may fetch from a broker this does not wake; its fetching then resumes
/// as without it.
///
/// The byte limit is met as a number of records through the mean value size of the records taken in the
/// last interval (librdkafka counts value bytes). Only librdkafka before 2.2.0 gets this
/// (``isNeeded(version:)``); a later one checks `fetch.queue.backoff.ms` before the queue, so that a
/// wake-up does not help, and ``KafkaConsumer`` sets that property to ``queueBackoffMs`` instead.
///
/// Called only by ``KafkaConsumer/poll(timeoutMs:endOfPartition:)``, on the thread that polls.
final class PrefetchRefill: Sendable {
    /// `fetch.queue.backoff.ms` for librdkafka 2.2.0 and later, where this class is not needed: 10 ms
    /// (librdkafka: 1000). How long a partition whose queue reached the stop point waits before it is looked
    /// at again; at 10 ms its broker thread wakes 100 times a second while the queue stays full, and a
    /// consumer taking 200 000 records a second has 2 000 fewer queued by then.
    static let queueBackoffMs = 10

    /// The longest a refill request waits for the leaders' answers: 1 s.
    static let requestTimeoutMs: Int32 = 1000
    /// Records taken between two looks at the queue's length (fewer when the stop point is very low).
    static let sampleInterval = 64

    private let client: KafkaClient
    private let queue: ConsumerQueue
    /// `queued.min.messages` of the consumer.
    private let minMessages: Int
    /// `queued.max.messages.kbytes` of the consumer, in bytes.
    private let maxBytes: Int
    private let state = Mutex(State())

    private struct State {
        var watch = Watch()
        var taken = 0
        var valueBytes = 0
        /// Records that reach the byte limit at the last interval's mean value size.
        var recordsPerByteLimit = Int.max
    }

    /// When to send a refill request, from the queue lengths seen (pure logic: no librdkafka).
    struct Watch: Equatable {
        enum Phase: Equatable {
            /// The queue was below the stop point at the last look: librdkafka is fetching.
            case roomy
            /// The queue was at (or within one sampling interval of) the stop point: fetching may have stopped.
            case full
        }
        var phase = Phase.roomy
        /// Whether a refill request is on its way (one at a time).
        private(set) var refilling = false
        /// Whether a look while the request was on its way found the queue at the stop point again. The
        /// records its wake-up fetched may have stopped fetching once more, so the phase after the request is
        /// then ``Phase/full``. (When the answer set the phase to ``Phase/roomy`` regardless, a queue that
        /// refilled and fell back below the stop point before the answer came was never seen full again, and
        /// librdkafka 2.0.2 fetched nothing until its broker thread's idle wait ended: pauses of about a
        /// second with `queued.min.messages` 40 000 in the benchmark.)
        private(set) var fullWhileRefilling = false

        /// Notes a look at the queue's `length`, with fetching stopping at `stopPoint` records and looks
        /// `margin` records apart.
        /// - Returns: whether to send a refill request now: the queue has fallen below the stop point after
        ///   reaching it, and no request is on its way (a look meanwhile only notes whether the queue
        ///   reached the stop point again).
        mutating func look(length: Int, stopPoint: Int, margin: Int) -> Bool {
            let atStopPoint = length >= stopPoint - margin
            if refilling {
                if atStopPoint { fullWhileRefilling = true }
                return false
            }
            switch phase {
            case .roomy:
                if atStopPoint { phase = .full }
                return false
            case .full:
                guard !atStopPoint else { return false }
                refilling = true
                fullWhileRefilling = false
                return true
            }
        }

        /// Notes that the refill request has been answered (or timed out).
        mutating func requestEnded() {
            refilling = false
            phase = fullWhileRefilling ? .full : .roomy
        }
    }

    /// Whether a librdkafka of `version` (`rd_kafka_version()`) stops fetching without a backoff of its
    /// own, so that this is needed: before 2.2.0.
    static func isNeeded(version: Int32 = rd_kafka_version()) -> Bool { version < 0x0202_0000 }

    /// Watches `client`'s consumer queue, with its `queued.min.messages` and `queued.max.messages.kbytes`.
    init(client: KafkaClient) {
        self.client = client
        self.queue = ConsumerQueue(client: client)
        self.minMessages = Self.property("queued.min.messages", of: client) ?? 100_000
        self.maxBytes = (Self.property("queued.max.messages.kbytes", of: client) ?? 65_536) * 1024
    }

    /// Notes a record taken from the queue, with its value's size in bytes.
    func taken(valueBytes: Int) {
        let sample = state.withLock { state -> Bool in
            state.taken += 1
            state.valueBytes += valueBytes
            guard state.taken >= Self.interval(stopPoint: min(minMessages, state.recordsPerByteLimit)) else { return false }
            state.recordsPerByteLimit = maxBytes / max(1, state.valueBytes / state.taken)
            state.taken = 0
            state.valueBytes = 0
            return true
        }
        if sample, let handle = queue.handle { look(length: Int(rd_kafka_queue_length(handle))) }
    }

    /// Notes a poll that found the queue empty.
    func foundEmpty() {
        if state.withLock({ $0.watch.phase == .full && !$0.watch.refilling }) { look(length: 0) }
    }

    /// Notes the queue's `length` (``Watch/look(length:stopPoint:margin:)``) and sends a refill request
    /// when it says so.
    private func look(length: Int) {
        let refill = state.withLock { state -> Bool in
            let stopPoint = min(minMessages, state.recordsPerByteLimit)
            return state.watch.look(length: length, stopPoint: stopPoint, margin: Self.interval(stopPoint: stopPoint))
        }
        guard refill else { return }
        let thread = Thread { [client, self] in
            Self.askLeaders(client)
            state.withLock { $0.watch.requestEnded() }
        }
        thread.name = "pushworker-refill"
        thread.start()
    }

    /// The sampling interval for a stop point of `stopPoint` records: ``sampleInterval``, or a quarter of
    /// the stop point when that is smaller (at least 1).
    private static func interval(stopPoint: Int) -> Int { max(1, min(sampleInterval, stopPoint / 4)) }

    /// Asks the leaders of `client`'s assigned partitions for their end offsets, which wakes their broker
    /// threads. Blocking (up to ``requestTimeoutMs``); the answer and any error are dropped: this is only a
    /// wake-up, and fetching goes on within librdkafka's own second without it.
    private static func askLeaders(_ client: KafkaClient) {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(client.handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard list.pointee.cnt > 0 else { return }
        for index in 0..<Int(list.pointee.cnt) { list.pointee.elems[index].offset = Int64(RD_KAFKA_OFFSET_END) }
        _ = rd_kafka_offsets_for_times(client.handle, list, requestTimeoutMs)
    }

    /// An integer property of the client's configuration (`rd_kafka_conf_get`), or `nil`.
    private static func property(_ name: String, of client: KafkaClient) -> Int? {
        guard let conf = rd_kafka_conf(client.handle) else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var size = buffer.count
        guard rd_kafka_conf_get(conf, name, &buffer, &size) == RD_KAFKA_CONF_OK else { return nil }
        return Int(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
