import CCJSON

/// The part of one librdkafka statistics report (`stats_cb`, every `statistics.interval.ms`) that
/// pushworker uses, read with cJSON. Field names follow librdkafka's `STATISTICS.md`.
///
/// Statistics are emitted only when `statistics.interval.ms` is above 0 (librdkafka's default is 0: off).
public struct KafkaStatistics: Sendable, Equatable {
    /// One broker connection (`brokers.*`).
    public struct Broker: Sendable, Equatable {
        /// `name`, e.g. `127.0.0.1:9092/1`, or `GroupCoordinator` for the logical coordinator broker.
        public var name: String
        /// `nodeid`: the broker id, or -1 for bootstrap and logical brokers.
        public var nodeId: Int
        /// `source`: `configured` (bootstrap), `learned` (from metadata), `internal` or `logical` (the
        /// group coordinator's stand-in, which shares a real broker's connection).
        public var source: String
        /// `state`: `INIT`, `DOWN`, `CONNECT`, `AUTH`, `APIVERSION_QUERY`, `AUTH_HANDSHAKE`, `UP`, `UPDATE`.
        public var state: String
        /// `req_timeouts`: requests timed out on this connection since the client started.
        public var requestTimeouts: Int
        /// Whether the connection is up (`state` is `UP`).
        public var isUp: Bool { state == "UP" }

        /// Creates a broker entry.
        public init(name: String, nodeId: Int, source: String, state: String, requestTimeouts: Int) {
            self.name = name
            self.nodeId = nodeId
            self.source = source
            self.state = state
            self.requestTimeouts = requestTimeouts
        }
    }

    /// One partition of a topic (`topics.*.partitions.*`, the internal partition -1 left out).
    public struct Partition: Sendable, Equatable {
        /// The topic.
        public var topic: String
        /// The partition.
        public var partition: Int32
        /// `consumer_lag`: the partition's end offset minus the consumer's stored or committed offset
        /// (whichever is higher), or -1 when unknown (no stored or committed offset yet, or not consumed).
        public var consumerLag: Int64
        /// `hi_offset`: the partition's high watermark, or -1 when unknown.
        public var highWatermark: Int64
        /// `lo_offset`: the partition's first offset, or -1 when unknown.
        public var lowWatermark: Int64

        /// Creates a partition entry.
        public init(topic: String, partition: Int32, consumerLag: Int64, highWatermark: Int64, lowWatermark: Int64 = -1) {
            self.topic = topic
            self.partition = partition
            self.consumerLag = consumerLag
            self.highWatermark = highWatermark
            self.lowWatermark = lowWatermark
        }
    }

    /// The consumer group member's state (`cgrp`), consumers only.
    public struct ConsumerGroup: Sendable, Equatable {
        /// `state`: e.g. `init`, `wait-coord`, `up` (the coordinator is known and connected).
        public var state: String
        /// `join_state`: e.g. `init`, `wait-join`, `steady`.
        public var joinState: String
        /// `assignment_size`: partitions assigned to this member.
        public var assignmentSize: Int
        /// `rebalance_cnt`: rebalances (assign or revoke) since the client started.
        public var rebalanceCount: Int

        /// Creates a consumer group entry.
        public init(state: String, joinState: String, assignmentSize: Int, rebalanceCount: Int) {
            self.state = state
            self.joinState = joinState
            self.assignmentSize = assignmentSize
            self.rebalanceCount = rebalanceCount
        }
    }

    /// `name`: the client's name, e.g. `rdkafka#consumer-1`.
    public var clientName: String
    /// `type`: `consumer` or `producer`.
    public var clientType: String
    /// `time`: the wall-clock time of the report, UNIX seconds.
    public var time: Int64
    /// `msg_cnt`: messages in the producer's queues (waiting to be sent or acknowledged); 0 on consumers
    /// that produce nothing.
    public var messagesQueued: Int
    /// `brokers`, sorted by name.
    public var brokers: [Broker]
    /// `topics.*.partitions.*`, sorted by topic and partition.
    public var partitions: [Partition]
    /// `cgrp`, or `nil` (producers; consumers without a group).
    public var consumerGroup: ConsumerGroup?

    /// Creates a report (for tests; reports from librdkafka come from ``parse(_:)``).
    public init(clientName: String, clientType: String, time: Int64, messagesQueued: Int, brokers: [Broker], partitions: [Partition], consumerGroup: ConsumerGroup?) {
        self.clientName = clientName
        self.clientType = clientType
        self.time = time
        self.messagesQueued = messagesQueued
        self.brokers = brokers
        self.partitions = partitions
        self.consumerGroup = consumerGroup
    }

    /// Connections up to real cluster members: brokers with a `nodeid` ≥ 0 that are not `logical` or
    /// `internal`, in state `UP`.
    public var brokersUp: Int { brokers.filter { $0.nodeId >= 0 && $0.isUp && $0.source != "logical" && $0.source != "internal" }.count }

    /// Reads a statistics report.
    /// - Parameter json: the JSON text librdkafka passed to `stats_cb`.
    /// - Returns: `nil` if it is not a JSON object.
    public static func parse(_ json: String) -> KafkaStatistics? {
        var json = json
        return json.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { parse(chars: $0) }
        }
    }

    /// Reads a statistics report from the bytes librdkafka passed to `stats_cb` (no copy).
    static func parse(chars: UnsafeBufferPointer<CChar>) -> KafkaStatistics? {
        guard let base = chars.baseAddress, let root = cJSON_ParseWithLength(base, chars.count) else { return nil }
        defer { cJSON_Delete(root) }
        guard cJSON_IsObject(root) != 0 else { return nil }
        return read(root)
    }

    private static func read(_ root: UnsafeMutablePointer<cJSON>) -> KafkaStatistics {
        var brokers: [Broker] = []
        for (name, broker) in members(root, "brokers") {
            brokers.append(Broker(
                name: string(broker, "name") ?? name, nodeId: int(broker, "nodeid") ?? -1, source: string(broker, "source") ?? "",
                state: string(broker, "state") ?? "", requestTimeouts: int(broker, "req_timeouts") ?? 0))
        }
        var partitions: [Partition] = []
        for (topicName, topic) in members(root, "topics") {
            for (_, partition) in members(topic, "partitions") {
                guard let number = int(partition, "partition"), number >= 0 else { continue }
                partitions.append(Partition(
                    topic: string(topic, "topic") ?? topicName, partition: Int32(clamping: number),
                    consumerLag: int64(partition, "consumer_lag") ?? -1, highWatermark: int64(partition, "hi_offset") ?? -1,
                    lowWatermark: int64(partition, "lo_offset") ?? -1))
            }
        }
        var group: ConsumerGroup?
        if let cgrp = cJSON_GetObjectItemCaseSensitive(root, "cgrp"), cJSON_IsObject(cgrp) != 0 {
            group = ConsumerGroup(
                state: string(cgrp, "state") ?? "", joinState: string(cgrp, "join_state") ?? "",
                assignmentSize: int(cgrp, "assignment_size") ?? 0, rebalanceCount: int(cgrp, "rebalance_cnt") ?? 0)
        }
        return KafkaStatistics(
            clientName: string(root, "name") ?? "", clientType: string(root, "type") ?? "",
            time: int64(root, "time") ?? 0, messagesQueued: int(root, "msg_cnt") ?? 0,
            brokers: brokers.sorted { $0.name < $1.name },
            partitions: partitions.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) },
            consumerGroup: group)
    }

    private static func members(_ object: UnsafeMutablePointer<cJSON>, _ key: String) -> [(String, UnsafeMutablePointer<cJSON>)] {
        guard let container = cJSON_GetObjectItemCaseSensitive(object, key), cJSON_IsObject(container) != 0 else { return [] }
        var result: [(String, UnsafeMutablePointer<cJSON>)] = []
        var child = container.pointee.child
        while let item = child {
            if cJSON_IsObject(item) != 0 { result.append((item.pointee.string.map { String(cString: $0) } ?? "", item)) }  // NUL-safe: librdkafka's own keys
            child = item.pointee.next
        }
        return result
    }

    private static func string(_ object: UnsafeMutablePointer<cJSON>, _ key: String) -> String? {
        guard let item = cJSON_GetObjectItemCaseSensitive(object, key), cJSON_IsString(item) != 0, let text = item.pointee.valuestring else { return nil }
        return String(cString: text)  // NUL-safe: librdkafka's own statistics text
    }

    private static func int64(_ object: UnsafeMutablePointer<cJSON>, _ key: String) -> Int64? {
        guard let item = cJSON_GetObjectItemCaseSensitive(object, key), cJSON_IsNumber(item) != 0 else { return nil }
        let value = item.pointee.valuedouble
        guard value.isFinite, value >= -9.2e18, value <= 9.2e18 else { return nil }
        return Int64(value)
    }

    private static func int(_ object: UnsafeMutablePointer<cJSON>, _ key: String) -> Int? {
        int64(object, key).map { Int(truncatingIfNeeded: $0) }
    }
}

/// Receives librdkafka's statistics reports, parsed (see ``KafkaStatistics``).
public typealias KafkaStatisticsHandler = @Sendable (KafkaStatistics) -> Void
