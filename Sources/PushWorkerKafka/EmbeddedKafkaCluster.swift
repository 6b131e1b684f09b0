import CRdKafka
import Synchronization

/// An embedded Kafka cluster: librdkafka's mock cluster (`rdkafka_mock.h`), a real Kafka protocol server
/// on loopback with consumer groups, idempotence and transactions, for development and tests.
///
/// It lives inside this process: its brokers stop when ``shutdown()`` is called or the value is freed.
/// Limits of librdkafka 2.0.2's mock (`rdkafka_mock.h`): no admin API, no retention, at most
/// 5 MiB / 100 000 message sets per partition (oldest dropped), static membership not stored.
///
/// `@unchecked Sendable`: the mock cluster and its owning client handle are set once in `init`, freed once
/// (guarded by the `Mutex`), and the mock API is thread-safe (it posts operations to the cluster's thread).
public final class EmbeddedKafkaCluster: @unchecked Sendable {
    private let owner: KafkaClient
    private let cluster: Mutex<MockClusterPointer?>
    /// The brokers' addresses, `host:port[,host:port...]`, for `bootstrap.servers`.
    public let bootstrapServers: String
    /// The number of brokers.
    public let brokerCount: Int

    /// Starts a cluster of `brokers` brokers on loopback ports chosen by the system.
    /// - Parameter logHandler: receives the owning client's logs.
    /// - Throws: ``KafkaError/Code/mockCluster`` if the cluster cannot start or `brokers` is below 1.
    public init(brokers: Int = 1, logHandler: KafkaLogHandler? = nil) throws {
        guard brokers >= 1 else { throw KafkaError(.mockCluster, "an embedded cluster needs at least one broker, got \(brokers)") }
        // A minimal producer owns the mock cluster; it never produces.
        var configuration = KafkaConfiguration()
        configuration["client.id"] = "pushworker-embedded-cluster"
        // The owner never connects: hide its "No bootstrap.servers configured" notice (log_level 4 = warning).
        configuration["log_level"] = "4"
        owner = try KafkaClient(kind: .producer, configuration: configuration, callbacks: KafkaCallbacks(log: logHandler))
        guard let mc = rd_kafka_mock_cluster_new(owner.handle, Int32(brokers)) else {
            throw KafkaError(.mockCluster, "rd_kafka_mock_cluster_new failed")
        }
        cluster = Mutex(MockClusterPointer(raw: mc))
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(mc))  // NUL-safe: librdkafka's own host:port list
        brokerCount = brokers
    }

    /// Creates a topic (`rd_kafka_mock_topic_create`). Creating an existing topic is not an error.
    /// - Parameters:
    ///   - partitions: the number of partitions, at least 1.
    ///   - replicationFactor: at most the number of brokers.
    /// - Throws: ``KafkaError/Code/mockCluster`` if the cluster refused or was shut down.
    public func createTopic(_ name: String, partitions: Int = 1, replicationFactor: Int = 1) throws {
        try cluster.withLock { mc in
            guard let mc else { throw KafkaError(.closed, "the embedded cluster is shut down") }
            let err = rd_kafka_mock_topic_create(mc.raw, name, Int32(partitions), Int32(replicationFactor))
            if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
                throw KafkaError(.mockCluster, "create topic \(name)", err)
            }
        }
    }

    /// Takes a broker down (`rd_kafka_mock_broker_set_down`): its connections are closed and new ones
    /// refused until ``setBrokerUp(_:)``. Broker ids start at 1.
    ///
    /// librdkafka closes the broker's listener and binds its port again at once, and aborts the process if
    /// that bind fails, as it does while a child process being started holds a copy of the old listener: in
    /// a process that starts children, call it inside `SpawnGate.whileNoChildStarts` (PushWorkerCore).
    public func setBrokerDown(_ brokerId: Int32) throws {
        try withCluster { rd_kafka_mock_broker_set_down($0, brokerId) }
    }

    /// Brings a broker back (`rd_kafka_mock_broker_set_up`).
    public func setBrokerUp(_ brokerId: Int32) throws {
        try withCluster { rd_kafka_mock_broker_set_up($0, brokerId) }
    }

    /// Makes the cluster's metadata report `error` for `topic` (`rd_kafka_mock_topic_set_error`), e.g.
    /// `LEADER_NOT_AVAILABLE` (5): producers hold its records until the error is cleared with 0
    /// (`NO_ERROR`) or `message.timeout.ms` fails them.
    public func setTopicError(_ topic: String, error: Int32) throws {
        try withCluster { mc in
            rd_kafka_mock_topic_set_error(mc, topic, rd_kafka_resp_err_t(rawValue: error))
            return RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// Makes the next `count` requests with Kafka API key `apiKey` fail with librdkafka error `error`
    /// (`rd_kafka_mock_push_request_errors`), e.g. API key 0 (Produce) with `NOT_LEADER_FOR_PARTITION`.
    public func pushRequestErrors(apiKey: Int16, count: Int, error: Int32) {
        cluster.withLock { mc in
            guard let mc else { return }
            var errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: error), count: count)
            rd_kafka_mock_push_request_errors_array(mc.raw, apiKey, count, &errors)
        }
    }

    /// Makes broker `brokerId`'s next response to a request with Kafka API key `apiKey` (``KafkaAPIKey``)
    /// wait `delayMs` milliseconds and then fail with librdkafka error `error` (0: succeed late)
    /// (`rd_kafka_mock_broker_push_request_error_rtts`), e.g. a slow EndTxn, so that a call with a shorter
    /// timeout returns `_TIMED_OUT`.
    /// - Throws: ``KafkaError/Code/mockCluster`` if the broker does not exist.
    public func delayNextResponse(brokerId: Int32 = 1, apiKey: Int16, delayMs: Int32, error: Int32 = 0) throws {
        try withCluster { pushworker_mock_push_request_error_rtt($0, brokerId, apiKey, rd_kafka_resp_err_t(rawValue: error), delayMs) }
    }

    /// Forgets the request errors still pushed for Kafka API key `apiKey`
    /// (`rd_kafka_mock_clear_request_errors`): its next requests succeed again.
    public func clearRequestErrors(apiKey: Int16) {
        cluster.withLock { mc in
            guard let mc else { return }
            rd_kafka_mock_clear_request_errors(mc.raw, apiKey)
        }
    }

    /// Delays every response of broker `brokerId` by `rttMs` milliseconds (`rd_kafka_mock_broker_set_rtt`):
    /// a slow broker or a slow network. `brokerId` -1 means every broker; `rttMs` 0 takes the delay away.
    /// The delay applies to responses sent from now on (a request waiting for its response gets it later).
    /// - Throws: ``KafkaError/Code/mockCluster`` for an unknown broker (`BROKER_NOT_AVAILABLE`);
    ///   ``KafkaError/Code/closed`` once shut down.
    public func setBrokerRTT(_ brokerId: Int32, rttMs: Int) throws {
        try withCluster { rd_kafka_mock_broker_set_rtt($0, brokerId, Int32(clamping: rttMs)) }
    }

    /// Makes broker `brokerId` the coordinator of consumer group `group` (`rd_kafka_mock_coordinator_set`,
    /// key type `group`): a coordinator move. The group's state (members, generation, committed offsets)
    /// stays, as the mock keeps it per cluster; the old coordinator answers the group's JoinGroup, SyncGroup,
    /// Heartbeat and LeaveGroup requests `NOT_COORDINATOR` from now on, so clients find the new one. A
    /// broker id that does not exist makes the group's coordinator unavailable (`COORDINATOR_NOT_AVAILABLE`).
    /// - Throws: ``KafkaError/Code/closed`` once shut down.
    public func setGroupCoordinator(group: String, brokerId: Int32) throws {
        try withCluster { rd_kafka_mock_coordinator_set($0, "group", group, brokerId) }
    }

    /// Makes broker `brokerId` the leader of `topic`'s `partition` (`rd_kafka_mock_partition_set_leader`),
    /// or leaves it without a leader with -1: a leader move. The partition's records stay (the mock keeps
    /// one log per partition, not per broker); the old leader answers Produce and Fetch requests for it
    /// `NOT_LEADER_FOR_PARTITION`, and clients find the new leader in their next metadata. The topic is
    /// created if it does not exist.
    /// - Throws: ``KafkaError/Code/mockCluster`` for an unknown broker (`BROKER_NOT_AVAILABLE`) or
    ///   partition (`UNKNOWN_TOPIC_OR_PART`); ``KafkaError/Code/closed`` once shut down.
    public func setPartitionLeader(topic: String, partition: Int32, brokerId: Int32) throws {
        try withCluster { rd_kafka_mock_partition_set_leader($0, topic, partition, brokerId) }
    }

    /// Makes the next requests with Kafka API key `apiKey` that broker `brokerId` receives fail, one per
    /// entry of `errors`, in order: each with its librdkafka error code (0 for none) after its response
    /// delay in milliseconds (`rd_kafka_mock_broker_push_request_error_rtts`, one tuple at a time). A
    /// broker's errors are used before the cluster's (``pushRequestErrors(apiKey:count:error:)``).
    /// `RD_KAFKA_RESP_ERR__TRANSPORT` (-195) closes the connection instead of answering.
    /// Kafka API keys: Produce 0, Fetch 1, OffsetCommit 8, FindCoordinator 10, JoinGroup 11, Heartbeat 12,
    /// SyncGroup 14.
    /// - Throws: ``KafkaError/Code/mockCluster`` for an unknown broker; ``KafkaError/Code/closed`` once shut down.
    public func pushRequestErrors(brokerId: Int32, apiKey: Int16, errors: [(error: Int32, rttMs: Int)]) throws {
        for entry in errors {
            try withCluster {
                pushworker_mock_push_request_error_rtt($0, brokerId, apiKey, rd_kafka_resp_err_t(rawValue: entry.error), Int32(clamping: entry.rttMs))
            }
        }
    }

    /// How many of the errors pushed with ``pushRequestErrors(brokerId:apiKey:errors:)`` broker `brokerId`
    /// has not used yet for `apiKey` (`rd_kafka_mock_broker_error_stack_cnt`): the pushed count minus this
    /// is how many requests failed so far.
    /// - Throws: ``KafkaError/Code/mockCluster`` for an unknown broker; ``KafkaError/Code/closed`` once shut down.
    public func requestErrorsLeft(brokerId: Int32, apiKey: Int16) throws -> Int {
        var count = 0
        try withCluster { mc in
            rd_kafka_mock_broker_error_stack_cnt(mc, brokerId, apiKey, &count)
        }
        return count
    }

    /// Stops the brokers (`rd_kafka_mock_cluster_destroy`). Clients still connected see transport errors.
    /// Calling it twice does nothing.
    public func shutdown() {
        let mc = cluster.withLock { mc -> MockClusterPointer? in
            defer { mc = nil }
            return mc
        }
        if let mc { rd_kafka_mock_cluster_destroy(mc.raw) }
    }

    deinit {
        shutdown()
    }

    private func withCluster(_ body: (OpaquePointer) -> rd_kafka_resp_err_t) throws {
        try cluster.withLock { mc in
            guard let mc else { throw KafkaError(.closed, "the embedded cluster is shut down") }
            let err = body(mc.raw)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.mockCluster, "mock cluster request", err) }
        }
    }
}

/// The mock cluster pointer. `@unchecked Sendable`: the mock API posts every operation to the cluster's
/// own thread, so the pointer may be used from any thread until `rd_kafka_mock_cluster_destroy`, which
/// ``EmbeddedKafkaCluster`` calls once, after taking it out of its `Mutex`.
struct MockClusterPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
