import CRdKafka
import Foundation
import Synchronization

/// A librdkafka high-level consumer, a member of a consumer group.
///
/// Every method that can block (``poll(timeoutMs:)``, ``commit()``, ``committed(_:timeoutMs:)``,
/// ``close()``) must run on a dedicated thread, never on the cooperative thread pool. The rebalance
/// handler runs on the thread that calls ``poll(timeoutMs:)`` or ``close()``. Both eager and cooperative
/// assignment protocols are handled (`partition.assignment.strategy`).
public final class KafkaConsumer: Sendable {
    private let client: KafkaClient
    private let closed = Atomic<Bool>(false)
    private let topicNames = Mutex(TopicNameCache())
    /// Set by the rebalance callback when the group first assigns partitions (an empty list included).
    private let firstAssignment: FirstAssignment
    /// Restarts fetching as soon as the queue has room (librdkafka before 2.2.0 only, see ``PrefetchRefill``).
    private let refill: PrefetchRefill?
    /// The consumer queue whose wake-ups go to a descriptor (``enableWakeups(descriptor:)``), kept until
    /// ``disableWakeups()``.
    private let wakeups = Mutex<ConsumerQueue?>(nil)

    /// Whether the consumer group has given this member its first assignment, and how many rebalance
    /// callbacks it has served; shared with the rebalance callback, which is created before the consumer.
    private final class FirstAssignment: Sendable {
        let arrived = Atomic<Bool>(false)
        let served = Atomic<Int>(0)
    }

    /// Creates a consumer. Offsets are stored only by ``storeOffsets(_:)`` when the configuration sets
    /// `enable.auto.offset.store=false`, as at-least-once processing needs.
    ///
    /// A consumer fetches again as soon as its queue has room after being full: with librdkafka before
    /// 2.2.0 through ``PrefetchRefill``, from 2.2.0 on with `fetch.queue.backoff.ms` at
    /// ``PrefetchRefill/queueBackoffMs`` unless the configuration sets it (librdkafka's default, 1000 ms,
    /// leaves a consumer that drains its queue quickly idle for up to a second each time).
    ///
    /// - Parameters:
    ///   - configuration: librdkafka properties, with `bootstrap.servers` and `group.id` at least.
    ///   - logHandler: receives librdkafka's logs and errors.
    ///   - onRebalance: told of assignments, revocations and lost partitions.
    ///   - onStatistics: receives librdkafka's statistics every `statistics.interval.ms` (when set above 0),
    ///     on the thread that calls ``poll(timeoutMs:)``. Keep it short.
    /// - Throws: ``KafkaError`` if a property is invalid or the client cannot be created.
    public init(
        configuration: KafkaConfiguration,
        logHandler: KafkaLogHandler? = nil,
        onRebalance: @escaping @Sendable (KafkaRebalanceEvent) -> Void = { _ in },
        onStatistics: KafkaStatisticsHandler? = nil
    ) throws {
        let firstAssignment = FirstAssignment()
        self.firstAssignment = firstAssignment
        // The configured assignor, for when librdkafka cannot say which protocol the group uses.
        let configuredCooperative = configuration["partition.assignment.strategy"]?.contains("cooperative") == true
        let callbacks = KafkaCallbacks(log: logHandler, rebalance: { rk, err, list in
            let partitions = PartitionList.read(list).map(\.topicPartition)
            // rd_kafka_rebalance_protocol returns NULL when its request to the group's thread fails (seen
            // while a consumer closes, with several consumers in one process): then the configured assignor
            // decides.
            let cooperative = rd_kafka_rebalance_protocol(rk).map { String(cString: $0) == "COOPERATIVE" } ?? configuredCooperative  // NUL-safe: librdkafka's own text (names, errors, versions)
            func report(_ context: String, _ error: OpaquePointer?) {
                guard let error else { return }
                let text = String(cString: rd_kafka_error_string(error))  // NUL-safe: librdkafka's own text (names, errors, versions)
                rd_kafka_error_destroy(error)
                logHandler?(KafkaLogMessage(severity: 3, facility: "REBALANCE", message: "\(context) failed: \(text)", client: String(cString: rd_kafka_name(rk))))  // NUL-safe: librdkafka's own text (names, errors, versions)
            }
            // Counted after the assignment is applied (the defer), so that a reader who sees the count has
            // changed also sees the new assignment.
            defer { firstAssignment.served.add(1, ordering: .releasing) }
            switch err {
            case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                firstAssignment.arrived.store(true, ordering: .releasing)
                if cooperative {
                    report("incremental assign", rd_kafka_incremental_assign(rk, list))
                } else {
                    _ = rd_kafka_assign(rk, list)
                }
                onRebalance(.assigned(partitions))
            case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                if rd_kafka_assignment_lost(rk) != 0 {
                    onRebalance(.lost(partitions))
                } else {
                    onRebalance(.revoking(partitions))
                }
                if cooperative {
                    report("incremental unassign", rd_kafka_incremental_unassign(rk, list))
                } else {
                    _ = rd_kafka_assign(rk, nil)
                }
            default:
                logHandler?(KafkaLogMessage(severity: 3, facility: "REBALANCE", message: "rebalance error: \(String(cString: rd_kafka_err2str(err)))", client: String(cString: rd_kafka_name(rk))))  // NUL-safe: librdkafka's own text (names, errors, versions)
                _ = rd_kafka_assign(rk, nil)
            }
        }, statistics: onStatistics)
        var configuration = configuration
        if !PrefetchRefill.isNeeded() { configuration.setDefault("fetch.queue.backoff.ms", String(PrefetchRefill.queueBackoffMs)) }
        let client = try KafkaClient(kind: .consumer, configuration: configuration, callbacks: callbacks)
        self.client = client
        self.refill = PrefetchRefill.isNeeded() ? PrefetchRefill(client: client) : nil
        // Serve the main queue (logs are on their own threads) through rd_kafka_consumer_poll.
        rd_kafka_poll_set_consumer(client.handle)
    }

    /// Creates a consumer that reads the partitions it is given with ``assign(_:)``, never joining a group
    /// and committing nothing: `enable.auto.commit=false`, and a made-up unique `group.id`
    /// (`pushworker-reader-…`) unless the configuration sets one, because librdkafka 2.0.2 refuses
    /// `rd_kafka_assign` without a `group.id`. Read every partition of a topic with ``partitions(of:timeoutMs:)``.
    ///
    /// - Parameters:
    ///   - configuration: librdkafka properties, with `bootstrap.servers` at least.
    ///   - logHandler: receives librdkafka's logs and errors.
    /// - Throws: ``KafkaError`` if a property is invalid or the client cannot be created.
    public static func reader(configuration: KafkaConfiguration, logHandler: KafkaLogHandler? = nil) throws -> KafkaConsumer {
        var properties = configuration
        properties.setDefault("group.id", "pushworker-reader-\(UUID().uuidString.prefix(8))")
        properties["enable.auto.commit"] = "false"
        return try KafkaConsumer(configuration: properties, logHandler: logHandler)
    }

    /// Subscribes to `topics` (`rd_kafka_subscribe`); partitions arrive through the rebalance handler.
    /// - Throws: ``KafkaError/Code/consumer`` if librdkafka refuses the subscription.
    public func subscribe(_ topics: [String]) throws {
        let entries = topics.map { TopicPartitionOffset(TopicPartition(topic: $0, partition: RD_KAFKA_PARTITION_UA), offset: Int64(RD_KAFKA_OFFSET_INVALID)) }
        let err = PartitionList.with(entries) { rd_kafka_subscribe(client.handle, $0) }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "subscribe to \(topics)", err) }
    }

    /// Waits up to `timeoutMs` for the next record (`rd_kafka_consumer_poll`), serving rebalances and
    /// other callbacks meanwhile. Blocking: call on a dedicated thread.
    ///
    /// - Parameter endOfPartition: called with the partition and its end offset when the consumer has
    ///   read a partition to its end (librdkafka's `_PARTITION_EOF` event, sent only with
    ///   `enable.partition.eof=true`; again after each new record read to the end).
    /// - Returns: the record, copied, or `nil` when none arrived in time, after ``wakeUp()``, at the end of
    ///   a partition, or when the poll returned a non-fatal consumer error (which is logged through the log
    ///   handler).
    /// - Throws: ``KafkaError/Code/fatal`` on a fatal client error.
    public func poll(timeoutMs: Int32, endOfPartition: ((TopicPartition, Int64) -> Void)? = nil) throws -> KafkaRecord? {
        guard let message = rd_kafka_consumer_poll(client.handle, timeoutMs) else {
            refill?.foundEmpty()
            return nil
        }
        defer { rd_kafka_message_destroy(message) }
        let err = message.pointee.err
        if err == RD_KAFKA_RESP_ERR_NO_ERROR {
            refill?.taken(valueBytes: message.pointee.len)
            // One topic name per topic handle, not one String per record.
            let rkt = message.pointee.rkt
            let topic = topicNames.withLock { $0.name(of: rkt) }
            return KafkaRecord(copying: message, topic: topic)
        }
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF {
            if let endOfPartition, let rkt = message.pointee.rkt {
                let topic = topicNames.withLock { $0.name(of: rkt) }
                endOfPartition(TopicPartition(topic: topic, partition: message.pointee.partition), message.pointee.offset)
            }
            return nil
        }
        if err == RD_KAFKA_RESP_ERR__FATAL {
            var errstr = [CChar](repeating: 0, count: 512)
            let fatal = rd_kafka_fatal_error(client.handle, &errstr, errstr.count)
            throw KafkaError(.fatal, "fatal consumer error", fatal)
        }
        let text = message.pointee.payload.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""  // NUL-safe: librdkafka's own text (names, errors, versions)
        client.callbacks.log?(KafkaLogMessage(
            severity: 4, facility: "CONSUME",
            message: "\(String(cString: rd_kafka_err2name(err))): \(String(cString: rd_kafka_err2str(err))) \(text)",  // NUL-safe: librdkafka's own text (names, errors, versions)
            client: client.name))
        return nil
    }

    /// Wakes a ``poll(timeoutMs:)`` blocked on another thread (`rd_kafka_queue_yield`).
    public func wakeUp() {
        guard let queue = rd_kafka_queue_get_consumer(client.handle) else { return }
        rd_kafka_queue_yield(queue)
        rd_kafka_queue_destroy(queue)
    }

    /// Has librdkafka write one 8-byte count of 1 (an `eventfd` increment) to `descriptor` whenever the
    /// consumer queue goes from empty to non-empty (`rd_kafka_queue_io_event_enable`): records, rebalances
    /// and errors alike, since the main queue is forwarded to it. Lets one thread wait for several
    /// consumers (``KafkaGroupMembers``). The descriptor must stay open until ``disableWakeups()``.
    func enableWakeups(descriptor: Int32) {
        let queue = ConsumerQueue(client: client)
        guard let handle = queue.handle else { return }
        var one: UInt64 = 1
        withUnsafeBytes(of: &one) { rd_kafka_queue_io_event_enable(handle, descriptor, $0.baseAddress, $0.count) }
        wakeups.withLock { $0 = queue }
    }

    /// Stops the writes of ``enableWakeups(descriptor:)`` (`rd_kafka_queue_io_event_enable` with -1);
    /// librdkafka writes nothing to the descriptor once this has returned. Calling it again does nothing.
    func disableWakeups() {
        guard let queue = wakeups.withLock({ wakeups -> ConsumerQueue? in
            defer { wakeups = nil }
            return wakeups
        }), let handle = queue.handle else { return }
        rd_kafka_queue_io_event_enable(handle, -1, nil, 0)
    }

    /// Stores offsets for the next commit (`rd_kafka_offsets_store`); each offset is the *next* one to
    /// consume. Auto-commit (`enable.auto.commit`, every `auto.commit.interval.ms`) and ``commit()`` commit
    /// only stored offsets.
    ///
    /// - Returns: the partitions whose offsets were refused, with librdkafka's error for each (e.g.
    ///   `_STATE` for a partition no longer assigned). Other partitions were stored.
    @discardableResult
    public func storeOffsets(_ offsets: [TopicPartitionOffset]) -> [(TopicPartition, KafkaError)] {
        guard !offsets.isEmpty else { return [] }
        return PartitionList.with(offsets) { list in
            _ = rd_kafka_offsets_store(client.handle, list)
            var failed: [(TopicPartition, KafkaError)] = []
            for index in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[index]
                if element.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    let tp = TopicPartition(topic: String(cString: element.topic), partition: element.partition)  // NUL-safe: librdkafka's own text (names, errors, versions)
                    failed.append((tp, KafkaError(.consumer, "store offset \(element.offset) for \(tp)", element.err)))
                }
            }
            return failed
        }
    }

    /// Commits the stored offsets now and waits for the broker (`rd_kafka_commit`, synchronous).
    /// Blocking: call on a dedicated thread. Having nothing to commit is not an error.
    /// - Throws: ``KafkaError/Code/consumer`` if the commit failed.
    public func commit() throws {
        let err = rd_kafka_commit(client.handle, nil, 0)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
            throw KafkaError(.consumer, "commit", err)
        }
    }

    /// Commits exactly `offsets` now and waits for the broker (`rd_kafka_commit` with an explicit list,
    /// synchronous). Unlike ``commit()``, librdkafka sends every offset given, also where it believes that
    /// offset committed already: a commit that librdkafka retried after an error can reach the coordinator
    /// after a newer one and set the partition back, which a commit of the stored offsets would then skip.
    /// Blocking: call on a dedicated thread. An empty list commits nothing.
    /// - Throws: ``KafkaError/Code/consumer`` if the commit failed.
    public func commit(_ offsets: [TopicPartitionOffset]) throws {
        guard !offsets.isEmpty else { return }
        try PartitionList.with(offsets) { list in
            let err = rd_kafka_commit(client.handle, list, 0)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                throw KafkaError(.consumer, "commit", err)
            }
        }
    }

    /// Commits exactly `offsets`, each with its metadata string, and waits for the broker (`rd_kafka_commit`
    /// with an explicit list, synchronous). A consumer that never subscribes commits them for its group as a
    /// standalone consumer (generation -1), which a group without members accepts. Blocking: call on a
    /// dedicated thread. An empty list commits nothing.
    /// - Throws: ``KafkaError/Code/consumer`` if the commit failed.
    public func commit(offsetsAndMetadata offsets: [OffsetAndMetadata]) throws {
        guard !offsets.isEmpty else { return }
        try PartitionList.with(metadata: offsets) { list in
            let err = rd_kafka_commit(client.handle, list, 0)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "commit with metadata", err) }
        }
    }

    /// The committed offsets of the group for `partitions` with their metadata strings
    /// (`rd_kafka_committed`), each up to its first NUL and at most 4096 bytes; an offset is -1001
    /// (`RD_KAFKA_OFFSET_INVALID`) where nothing is committed.
    /// Blocking: call on a dedicated thread.
    /// - Throws: ``KafkaError/Code/consumer`` if the request failed.
    public func committedOffsetsAndMetadata(_ partitions: [TopicPartition], timeoutMs: Int32) throws -> [OffsetAndMetadata] {
        let entries = partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) }
        return try PartitionList.with(entries) { list in
            let err = rd_kafka_committed(client.handle, list, timeoutMs)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "committed offsets", err) }
            return PartitionList.readWithMetadata(list)
        }
    }

    /// The committed offsets of the group for `partitions` (`rd_kafka_committed`); an offset is -1001
    /// (`RD_KAFKA_OFFSET_INVALID`) where nothing is committed. Blocking: call on a dedicated thread.
    /// - Throws: ``KafkaError/Code/consumer`` if the request failed.
    public func committed(_ partitions: [TopicPartition], timeoutMs: Int32) throws -> [TopicPartitionOffset] {
        let entries = partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) }
        return try PartitionList.with(entries) { list in
            let err = rd_kafka_committed(client.handle, list, timeoutMs)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "committed offsets", err) }
            return PartitionList.read(list)
        }
    }

    /// Reads `partitions` from the given offsets without joining a group (`rd_kafka_assign`); offsets may be
    /// `KafkaConsumer.offsetBeginning` or `KafkaConsumer.offsetEnd`.
    /// - Throws: ``KafkaError/Code/consumer`` if librdkafka refuses the assignment.
    public func assign(_ partitions: [TopicPartitionOffset]) throws {
        let err = PartitionList.with(partitions) { rd_kafka_assign(client.handle, $0) }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "assign", err) }
    }

    /// The logical offset "the first record of the partition" (`RD_KAFKA_OFFSET_BEGINNING`).
    public static let offsetBeginning = Int64(RD_KAFKA_OFFSET_BEGINNING)
    /// The logical offset "after the last record of the partition" (`RD_KAFKA_OFFSET_END`).
    public static let offsetEnd = Int64(RD_KAFKA_OFFSET_END)

    /// The number of partitions of `topic` from the cluster's metadata (`rd_kafka_metadata`).
    /// Blocking: call on a dedicated thread.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails or the topic does not exist.
    public func partitionCount(topic: String, timeoutMs: Int32) throws -> Int {
        try client.partitionCount(topic: topic, timeoutMs: timeoutMs)
    }

    /// The names of the cluster's topics, sorted, from its metadata (asking for no topic by name, so a
    /// broker that creates topics on request, as the embedded cluster does, creates none). Blocking: call
    /// on a dedicated thread.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails.
    public func topicNames(timeoutMs: Int32) throws -> [String] {
        try client.topicNames(timeoutMs: timeoutMs)
    }

    /// Every partition of `topic` (0 to ``partitionCount(topic:timeoutMs:)`` − 1), from the cluster's
    /// metadata. Blocking: call on a dedicated thread.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails or the topic does not exist.
    public func partitions(of topic: String, timeoutMs: Int32) throws -> [TopicPartition] {
        (0..<(try partitionCount(topic: topic, timeoutMs: timeoutMs))).map { TopicPartition(topic: topic, partition: Int32($0)) }
    }

    /// The low and high watermarks of a partition, asked of its leader (`rd_kafka_query_watermark_offsets`):
    /// the first offset still in the log and the offset the next record will get. Blocking: call on a
    /// dedicated thread.
    /// - Throws: ``KafkaError/Code/consumer`` if the request fails or times out.
    public func watermarks(_ partition: TopicPartition, timeoutMs: Int32) throws -> (low: Int64, high: Int64) {
        var low: Int64 = -1
        var high: Int64 = -1
        let err = rd_kafka_query_watermark_offsets(client.handle, partition.topic, partition.partition, &low, &high, timeoutMs)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "watermarks of \(partition)", err) }
        return (low, high)
    }

    /// The partitions currently assigned (`rd_kafka_assignment`).
    public func assignment() -> [TopicPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(client.handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return PartitionList.read(list).map(\.topicPartition)
    }

    /// Pauses fetching from `partitions` (`rd_kafka_pause_partitions`); prefetched records are dropped and
    /// fetched again after ``resume(_:)``.
    public func pause(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        _ = PartitionList.with(partitions.map { TopicPartitionOffset($0, offset: 0) }) { rd_kafka_pause_partitions(client.handle, $0) }
    }

    /// Resumes fetching from `partitions` (`rd_kafka_resume_partitions`).
    public func resume(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        _ = PartitionList.with(partitions.map { TopicPartitionOffset($0, offset: 0) }) { rd_kafka_resume_partitions(client.handle, $0) }
    }

    /// Leaves the consumer group (`rd_kafka_consumer_close`): revokes the assignment through the rebalance
    /// handler, commits stored offsets when auto-commit is on, and sends LeaveGroup (unless static
    /// membership is configured). Blocking: call on a dedicated thread. Calling it twice does nothing.
    /// - Throws: ``KafkaError/Code/consumer`` if closing failed.
    public func close() throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        disableWakeups()
        awaitFirstAssignmentIfJoined()
        if Self.destroyWouldAbort(version: rd_kafka_version()), !firstAssignment.arrived.load(ordering: .acquiring), memberId != nil {
            // Still no first assignment after the wait: destroying it would abort the process (#4312).
            client.leakAtRelease()
            client.callbacks.log?(KafkaLogMessage(
                severity: 4, facility: "CLOSE",
                message: "closing a consumer that the group never gave its first assignment: its handle is left to the process's exit (librdkafka before 2.3.0 aborts on destroying it, issue #4312)",
                client: client.name))
        }
        let err = rd_kafka_consumer_close(client.handle)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.consumer, "close", err) }
    }

    /// The name librdkafka gave this client.
    public var name: String { client.name }

    /// The `rd_kafka_t` handle, for the transactional producer's `rd_kafka_consumer_group_metadata`.
    var handle: OpaquePointer { client.handle }

    /// Moves the fetch position of assigned `offsets` partitions to their offsets (`rd_kafka_seek_partitions`),
    /// waiting until the fetcher has taken the new position: no record fetched before the seek is returned
    /// afterwards (prefetched records are purged). Used to rewind after an aborted transaction. Blocking:
    /// call on the thread that polls the consumer.
    ///
    /// Waits without a bound (`timeout_ms` -1): librdkafka 2.0.2 mishandles a finite timeout here
    /// (librdkafka issue #4230, fixed in 2.1.0).
    /// - Returns: the partitions librdkafka refused to seek, with its error for each.
    /// - Throws: ``KafkaError/Code/consumer`` if the whole call failed.
    @discardableResult
    public func seek(_ offsets: [TopicPartitionOffset]) throws -> [(TopicPartition, KafkaError)] {
        guard !offsets.isEmpty else { return [] }
        return try PartitionList.with(offsets) { list -> [(TopicPartition, KafkaError)] in
            if let error = rd_kafka_seek_partitions(client.handle, list, -1) {
                let text = String(cString: rd_kafka_error_string(error))  // NUL-safe: librdkafka's own text (names, errors, versions)
                let code = rd_kafka_error_code(error)
                rd_kafka_error_destroy(error)
                throw KafkaError(.consumer, "seek: \(text) (\(String(cString: rd_kafka_err2name(code))))", rdKafkaError: code.rawValue)  // NUL-safe: librdkafka's own text (names, errors, versions)
            }
            var failed: [(TopicPartition, KafkaError)] = []
            for index in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[index]
                if element.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    let tp = TopicPartition(topic: String(cString: element.topic), partition: element.partition)  // NUL-safe: topic names are [a-zA-Z0-9._-]+
                    failed.append((tp, KafkaError(.consumer, "seek \(tp) to \(element.offset)", element.err)))
                }
            }
            return failed
        }
    }

    /// The longest ``close()`` waits for the group's first assignment of a member that has joined
    /// (``awaitFirstAssignmentIfJoined()``): 10 s.
    static let firstAssignmentWaitMs = 10_000

    /// Works around librdkafka issue #4312 (fixed in 2.3.0): a consumer whose group chose the sticky
    /// assignor (`cooperative-sticky`, pushworker's default) at its JoinGroup, but which has not yet been
    /// given its first assignment, aborts the whole process when destroyed (`rd_kafka_cgrp_destroy_final`
    /// frees the assignor's state without checking it exists; the state is made with the first
    /// assignment: "Assertion `assignor_state' failed"). So when such a consumer is closed (a SIGTERM just
    /// after start-up, while the group rebalances), it first serves the consumer queue until the first
    /// assignment arrives, at most ``firstAssignmentWaitMs``. Records that arrive meanwhile are dropped
    /// unprocessed, their offsets never stored: they are read again by whoever owns their partition next.
    /// A member that has no member id has not had a JoinGroup answered, so nothing is waited for.
    /// Whether librdkafka `version` (`rd_kafka_version()`) has issue #4312 (fixed in 2.3.0).
    static func destroyWouldAbort(version: Int32) -> Bool { version < 0x0203_0000 }

    private func awaitFirstAssignmentIfJoined() {
        guard Self.destroyWouldAbort(version: rd_kafka_version()), !firstAssignment.arrived.load(ordering: .acquiring), memberId != nil else { return }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Self.firstAssignmentWaitMs))
        while !firstAssignment.arrived.load(ordering: .acquiring) && ContinuousClock.now < deadline {
            if let message = rd_kafka_consumer_poll(client.handle, 100) { rd_kafka_message_destroy(message) }
        }
    }

    /// Whether the group has given this member its first assignment (an empty one included).
    public var hasFirstAssignment: Bool { firstAssignment.arrived.load(ordering: .acquiring) }

    /// How many rebalance callbacks this member has served: assignments (empty ones included: with
    /// `cooperative-sticky` every completed rebalance ends in one), revocations and lost partitions. A
    /// change tells that the member has taken part in a rebalance since an earlier reading.
    public var rebalancesServed: Int { firstAssignment.served.load(ordering: .acquiring) }

    /// The member id the group coordinator gave this member at its JoinGroup (`rd_kafka_memberid`), or
    /// `nil` before that.
    public var memberId: String? {
        guard let id = rd_kafka_memberid(client.handle) else { return nil }
        defer { rd_kafka_mem_free(client.handle, id) }
        return id.pointee == 0 ? nil : String(cString: id)  // NUL-safe: member ids are the coordinator's printable ids
    }
}
