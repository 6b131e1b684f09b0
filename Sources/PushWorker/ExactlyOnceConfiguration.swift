import Foundation

/// The exactly-once results mode (configuration key `exactlyOnce`): results, dead letters and the input
/// offsets they complete are written in Kafka transactions (read-process-write, KIP-98 and KIP-447), so
/// that a reader with `isolation.level=read_committed` sees each input record's outputs exactly once,
/// together with the commit of its offset. Off by default (at-least-once, contract section 4).
///
/// Worker side effects stay at-least-once: a transaction that aborts (or a crash before its commit) makes
/// the records of its inputs run again. docs/guarantees.md, "Exactly-once results", says what is promised
/// and what was proven on librdkafka 2.0.2's mock cluster.
public struct ExactlyOnceConfiguration: Sendable, Equatable {
    /// Whether the mode is on (`exactlyOnce.enabled`, env `PUSHWORKER_EXACTLY_ONCE`). Default `false`.
    public var enabled = false
    /// The producer's `transactional.id` (`exactlyOnce.transactionalId`, env `PUSHWORKER_TRANSACTIONAL_ID`),
    /// or `nil` (the default) for `<groupId>-<host name>` (``effectiveTransactionalId(groupId:hostName:)``).
    ///
    /// One per member of the consumer group, and the same across restarts of that member: a restarted
    /// member's `rd_kafka_init_transactions` then fences its predecessor (a zombie still running) and aborts
    /// the transaction it left open. Since KIP-447 (Kafka 2.5, librdkafka 1.6+), offsets sent with the
    /// consumer's group metadata are fenced by the group's generation, so one transactional producer per
    /// member is enough (no longer one per input partition), as librdkafka's transactions documentation
    /// recommends. Two live members must never share an id: the second fences the first, which stops.
    public var transactionalId: String?
    /// How long a result may wait for its transaction (`exactlyOnce.commitIntervalMs`, in milliseconds):
    /// a transaction is committed once the oldest waiting result is this old, or sooner when
    /// ``maxRecordsPerTransaction`` are waiting. Default 100 ms: results become visible to
    /// `read_committed` readers within about that plus a commit's round trips; each transaction costs the
    /// broker a few requests (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) and markers.
    public var commitInterval: Duration = .milliseconds(100)
    /// The most input records whose outputs go into one transaction before it is committed early
    /// (`exactlyOnce.maxRecordsPerTransaction`). Default 5000.
    public var maxRecordsPerTransaction = 5000
    /// How long one transactional call (`rd_kafka_send_offsets_to_transaction`,
    /// `rd_kafka_commit_transaction`, `rd_kafka_abort_transaction`) waits before it returns librdkafka's
    /// retriable `_TIMED_OUT` and is called again. Default 10 s; not a file key (tests shorten it).
    var operationTimeout: Duration = .seconds(10)

    /// The defaults: off.
    public init() {}

    /// Creates a configuration.
    /// - Parameters:
    ///   - enabled: whether the mode is on.
    ///   - transactionalId: the `transactional.id`, or `nil` for `<groupId>-<host name>`.
    ///   - commitInterval: the longest a result waits for its transaction (default 100 ms).
    ///   - maxRecordsPerTransaction: input records per transaction before an early commit (default 5000).
    public init(enabled: Bool, transactionalId: String? = nil, commitInterval: Duration = .milliseconds(100), maxRecordsPerTransaction: Int = 5000) {
        self.enabled = enabled
        self.transactionalId = transactionalId
        self.commitInterval = commitInterval
        self.maxRecordsPerTransaction = maxRecordsPerTransaction
    }

    /// The `transactional.id` in effect: ``transactionalId`` when set, else `<groupId>-<hostName>` (stable
    /// across restarts on the same host, e.g. a StatefulSet pod's name, or a systemd host). Where the host
    /// name changes on every restart (a Deployment's pod), set ``transactionalId`` to a stable per-member name.
    /// - Parameter hostName: the machine's name; default `ProcessInfo.processInfo.hostName`.
    public func effectiveTransactionalId(groupId: String, hostName: String = ProcessInfo.processInfo.hostName) -> String {
        transactionalId ?? "\(groupId)-\(hostName)"
    }

    /// The longest a result waits for its transaction, in whole milliseconds, at least 1.
    var commitIntervalMs: Int64 { max(1, commitInterval.wholeMilliseconds) }
}
