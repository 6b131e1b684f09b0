import CRdKafka
import Glibc
import Synchronization

/// This process's members of one consumer group: one ``KafkaConsumer`` per subscribed topic, all with the
/// same `group.id`, polled by one thread as one consumer.
///
/// Why one member per topic: the group's assignor balances the *count* of partitions over the members
/// that subscribe a topic. With every topic in one subscription, `cooperative-sticky` gives a second
/// member the partitions it moves last (one topic's, in practice), so with an input topic and the retry
/// topic of 12 partitions each, a second replica got all 12 retry partitions and no input. With one
/// member per topic each topic's partitions are balanced on their own: N replicas hold ⌊P/N⌋ or ⌈P/N⌉
/// partitions of every topic, and a rebalance is still incremental (nothing moves that need not). The
/// offsets stay the group's, so committed positions, lag and the KEDA scaler see one group as before.
///
/// One thread polls every member (``poll(timeoutMs:)``); their rebalance callbacks therefore all run on
/// it, as with one consumer. It stays on one member while that member has records, up to
/// ``turnLength`` records in a row, then moves to the next, so that no topic's records wait behind
/// another topic's backlog. With nothing to read it sleeps on one `eventfd` that every member's queue
/// signals when it goes from empty to non-empty (`rd_kafka_queue_io_event_enable`). With one topic there
/// is one member and none of this: ``poll(timeoutMs:)`` is that consumer's own blocking poll.
///
/// Calls that name partitions (``storeOffsets(_:)``, ``commit(_:)``, ``pause(_:)``, ``resume(_:)``,
/// ``seek(_:)``) go to the member of each partition's topic.
public final class KafkaGroupMembers: Sendable {
    /// The members, in the order of the topics given to ``init(configuration:topics:logHandler:onRebalance:onStatistics:)``.
    public let members: [KafkaConsumer]
    /// The subscribed topics.
    public let topics: [String]
    /// The topics each member subscribes, by the member's index.
    private let subscriptions: [[String]]
    private let index: [String: Int]
    /// The `eventfd` the members' queues signal; `nil` with one member.
    private let wake: WakeDescriptor?
    /// The member polled first, and the records taken from it in a row (``pollEach()``). Atomics rather
    /// than a lock: only the polling thread touches them, so relaxed loads and stores suffice, and they cost
    /// nothing per record.
    private let cursorMember = Atomic<Int>(0)
    private let cursorTaken = Atomic<Int>(0)
    /// The latest statistics of each member, merged into one report (``KafkaStatistics/merging(_:)``).
    private let reports: LatestReports

    /// The most records taken from one member in a row while others may have records: 256.
    public static let turnLength = 256

    /// Creates one member per topic (each a ``KafkaConsumer`` with `configuration`; none subscribes yet:
    /// ``subscribe()``).
    ///
    /// - Parameters:
    ///   - configuration: librdkafka properties for every member, with `bootstrap.servers` and `group.id`.
    ///   - topics: the topics, one member each; duplicates are read once.
    ///   - memberPerTopic: whether each topic gets a member of its own (default); `false` makes one member
    ///     that subscribes every topic.
    ///   - logHandler: receives every member's logs and errors.
    ///   - onRebalance: told of every member's assignments, revocations and lost partitions, on the thread
    ///     that calls ``poll(timeoutMs:)`` or ``close()``.
    ///   - onStatistics: receives the members' statistics merged into one report, each time one member's
    ///     arrives (the others' as last reported).
    /// - Throws: ``KafkaError`` if a property is invalid, a client cannot be created or `topics` is empty.
    public init(
        configuration: KafkaConfiguration, topics: [String], memberPerTopic: Bool = true, logHandler: KafkaLogHandler? = nil,
        onRebalance: @escaping @Sendable (KafkaRebalanceEvent) -> Void = { _ in },
        onStatistics: KafkaStatisticsHandler? = nil
    ) throws {
        var unique: [String] = []
        for topic in topics where !unique.contains(topic) { unique.append(topic) }
        guard !unique.isEmpty else { throw KafkaError(.invalidConfiguration, "a consumer group member needs at least one topic") }
        self.topics = unique
        // One member for every topic when not a member per topic: all topics route to it.
        self.index = Dictionary(uniqueKeysWithValues: unique.enumerated().map { ($1, memberPerTopic ? $0 : 0) })
        self.subscriptions = memberPerTopic ? unique.map { [$0] } : [unique]
        let reports = LatestReports(count: memberPerTopic ? unique.count : 1)
        self.reports = reports
        var members: [KafkaConsumer] = []
        for (position, topic) in (memberPerTopic ? unique : [unique[0]]).enumerated() {
            var statistics: KafkaStatisticsHandler?
            if let onStatistics {
                statistics = { @Sendable (report: KafkaStatistics) -> Void in
                    // Each member reports every topic it knows; keep the partitions of its own.
                    var own = report
                    if memberPerTopic { own.partitions.removeAll { $0.topic != topic } }
                    if let merged = reports.merged(with: own, at: position) { onStatistics(merged) }
                }
            }
            var properties = configuration
            if let instance = configuration["group.instance.id"] {
                properties["group.instance.id"] = Self.instanceId(instance, topic: topic, position: position)
            }
            members.append(try KafkaConsumer(configuration: properties, logHandler: logHandler, onRebalance: onRebalance, onStatistics: statistics))
        }
        self.members = members
        if members.count > 1 {
            let wake = try WakeDescriptor()
            for member in members { member.enableWakeups(descriptor: wake.descriptor) }
            self.wake = wake
        } else {
            self.wake = nil
        }
    }

    /// The `group.instance.id` (static membership, KIP-345) of the member at `position`, which reads
    /// `topic`: the configured id for the first member, `<id>.<topic>` for the others, so that no two
    /// members of one process share an id (the coordinator would fence one of them: `FENCED_INSTANCE_ID`)
    /// and each keeps its id across restarts. Where that would pass Kafka's 249 characters, `<id>.<position>`.
    public static func instanceId(_ configured: String, topic: String, position: Int) -> String {
        guard position > 0 else { return configured }
        let byTopic = "\(configured).\(topic)"
        return byTopic.utf8.count <= 249 ? byTopic : "\(configured).\(position)"
    }

    deinit {
        // librdkafka must write nothing more to the descriptor before it is closed.
        for member in members { member.disableWakeups() }
    }

    /// Connects every member to the cluster before it subscribes: asks each for every subscribed topic's
    /// metadata (`rd_kafka_metadata`), at most `timeoutMs` each, ignoring failures (the subscription
    /// retries), so that whichever member the coordinator elects leader knows all the topics it assigns. The
    /// members' JoinGroup requests then leave within milliseconds of each other and land in the group's
    /// first generation together. A member that joins a generation later costs the group one more
    /// rebalance, during which commits are refused (`REBALANCE_IN_PROGRESS`): quick on a real broker, but
    /// `session.timeout.ms` − 1 s on the embedded cluster, whose first join waits only 3 s for others.
    /// Blocking: call on a dedicated thread.
    public func connect(timeoutMs: Int32) {
        guard members.count > 1 else { return }
        for member in members {
            for topic in topics { _ = try? member.partitionCount(topic: topic, timeoutMs: timeoutMs) }
        }
    }

    /// Subscribes each member to its topic (`rd_kafka_subscribe`); partitions arrive through the rebalance
    /// handler.
    /// - Throws: ``KafkaError/Code/consumer`` if librdkafka refuses a subscription.
    public func subscribe() throws {
        for (member, subscription) in zip(members, subscriptions) { try member.subscribe(subscription) }
    }

    /// Waits up to `timeoutMs` for the next record of any member, serving every member's rebalances and
    /// callbacks meanwhile. Blocking: call on a dedicated thread, always the same one.
    /// - Returns: the record, or `nil` when none arrived in time or after ``wakeUp()``.
    /// - Throws: ``KafkaError/Code/fatal`` on a fatal client error of any member.
    public func poll(timeoutMs: Int32) throws -> KafkaRecord? {
        guard let wake else { return try members[0].poll(timeoutMs: timeoutMs) }
        guard timeoutMs > 0 else { return try pollEach() }
        // Drained first: a queue that fills after this point signals again, so the wait below cannot miss it.
        wake.drain()
        if let record = try pollEach() { return record }
        wake.wait(timeoutMs: timeoutMs)
        return try pollEach()
    }

    /// Polls the members without waiting, starting at the cursor; see the type's doc for the turns.
    private func pollEach() throws -> KafkaRecord? {
        let start = cursorMember.load(ordering: .relaxed)
        for step in 0..<members.count {
            let position = (start + step) % members.count
            guard let record = try members[position].poll(timeoutMs: 0) else { continue }
            let taken = position == start ? cursorTaken.load(ordering: .relaxed) + 1 : 1
            if taken >= Self.turnLength {
                cursorMember.store((position + 1) % members.count, ordering: .relaxed)
                cursorTaken.store(0, ordering: .relaxed)
            } else {
                cursorMember.store(position, ordering: .relaxed)
                cursorTaken.store(taken, ordering: .relaxed)
            }
            return record
        }
        return nil
    }

    /// Wakes a ``poll(timeoutMs:)`` blocked on another thread.
    public func wakeUp() {
        if let wake { wake.signal() } else { members[0].wakeUp() }
    }

    /// `items` split by the member of each one's topic. With one member every item goes to it (librdkafka
    /// refuses what it does not hold); with several, items of a topic no member reads are left out.
    public func byMember<Item>(_ items: [Item], topic: (Item) -> String) -> [(KafkaConsumer, [Item])] {
        if members.count == 1 { return items.isEmpty ? [] : [(members[0], items)] }
        var groups: [Int: [Item]] = [:]
        for item in items {
            guard let position = index[topic(item)] else { continue }
            groups[position, default: []].append(item)
        }
        return groups.keys.sorted().map { (members[$0], groups[$0] ?? []) }
    }

    /// Stores offsets for the next commit, each with the member of its topic (``KafkaConsumer/storeOffsets(_:)``).
    /// - Returns: the partitions whose offsets were refused, with librdkafka's error for each.
    @discardableResult
    public func storeOffsets(_ offsets: [TopicPartitionOffset]) -> [(TopicPartition, KafkaError)] {
        byMember(offsets, topic: \.topicPartition.topic).flatMap { $0.storeOffsets($1) }
    }

    /// Commits every member's stored offsets (``KafkaConsumer/commit()``). Blocking: dedicated thread.
    /// - Throws: the first member's ``KafkaError`` after trying every member.
    public func commit() throws {
        var failure: (any Error)?
        for member in members {
            do { try member.commit() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Commits exactly `offsets`, each with the member of its topic (``KafkaConsumer/commit(_:)``).
    /// Blocking: dedicated thread.
    /// - Throws: the first ``KafkaError`` after trying every member.
    public func commit(_ offsets: [TopicPartitionOffset]) throws {
        var failure: (any Error)?
        for (member, own) in byMember(offsets, topic: \.topicPartition.topic) {
            do { try member.commit(own) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Pauses fetching from `partitions` (``KafkaConsumer/pause(_:)``).
    public func pause(_ partitions: [TopicPartition]) {
        for (member, own) in byMember(partitions, topic: \.topic) { member.pause(own) }
    }

    /// Resumes fetching from `partitions` (``KafkaConsumer/resume(_:)``).
    public func resume(_ partitions: [TopicPartition]) {
        for (member, own) in byMember(partitions, topic: \.topic) { member.resume(own) }
    }

    /// Moves the fetch positions (``KafkaConsumer/seek(_:)``). Blocking: the polling thread.
    /// - Returns: the partitions refused, with librdkafka's error for each.
    /// - Throws: the ``KafkaError`` of a member whose whole call failed.
    @discardableResult
    public func seek(_ offsets: [TopicPartitionOffset]) throws -> [(TopicPartition, KafkaError)] {
        try byMember(offsets, topic: \.topicPartition.topic).flatMap { try $0.seek($1) }
    }

    /// The partitions assigned to every member (``KafkaConsumer/assignment()``).
    public func assignment() -> [TopicPartition] {
        members.flatMap { $0.assignment() }
    }

    /// Leaves the group with every member, one after another (``KafkaConsumer/close()``). Blocking:
    /// dedicated thread.
    /// - Throws: the first member's ``KafkaError`` after closing every member.
    public func close() throws {
        var failure: (any Error)?
        for member in members {
            do { try member.close() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// Whether the group has given every member its first assignment (an empty one included): from then on
    /// the process is in the group's current generation with all its members.
    public var everyMemberAssigned: Bool { members.allSatisfy(\.hasFirstAssignment) }

    /// The member ids the coordinator gave the members (``KafkaConsumer/memberId``) joined by `+`, or
    /// `nil` before the first has one.
    public var memberId: String? {
        let ids = members.compactMap(\.memberId)
        return ids.isEmpty ? nil : ids.joined(separator: "+")
    }
}

/// The latest statistics report of each member of a ``KafkaGroupMembers``.
private final class LatestReports: Sendable {
    private let reports: Mutex<[KafkaStatistics?]>

    init(count: Int) { reports = Mutex(Array(repeating: nil, count: count)) }

    /// Keeps `report` as member `position`'s latest and returns every member's latest merged.
    func merged(with report: KafkaStatistics, at position: Int) -> KafkaStatistics? {
        reports.withLock { reports in
            reports[position] = report
            return KafkaStatistics.merging(reports.compactMap { $0 })
        }
    }
}

/// An `eventfd` (non-blocking, close-on-exec) that librdkafka's queues signal; closed in `deinit`.
private final class WakeDescriptor: Sendable {
    let descriptor: Int32

    init() throws {
        let descriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard descriptor >= 0 else { throw KafkaError(.clientCreation, "eventfd failed (errno \(errno))") }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Resets the count to 0 (one non-blocking read).
    func drain() {
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(descriptor, $0.baseAddress, $0.count) }
    }

    /// Adds 1 to the count, waking a ``wait(timeoutMs:)``.
    func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Waits up to `timeoutMs` until the count is above 0 (`poll`, interrupted by signals at most early).
    func wait(timeoutMs: Int32) {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        _ = Glibc.poll(&entry, 1, timeoutMs)
    }
}
