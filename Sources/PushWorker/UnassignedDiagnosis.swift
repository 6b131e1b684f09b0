import PushWorkerKafka

/// Why a consumer group member most likely has no partitions, read from the consumer's latest librdkafka
/// statistics (a pure function: the service's warning, ``StatusReporter``, logs what it says).
enum UnassignedDiagnosis: Equatable {
    /// No librdkafka statistics (`statistics.interval.ms` is 0: pushworker sets 5000 only while the HTTP
    /// server is enabled), so nothing tells why.
    case noStatistics
    /// The latest statistics are older than three statistics intervals: the consumer's poll thread (which
    /// serves them) may be stuck.
    case statisticsStale
    /// No connection to any broker is up.
    case brokersUnreachable
    /// Connected to brokers, but the group's coordinator is not found or not connected (`cgrp.state`).
    case coordinatorUnavailable(state: String)
    /// The member is in the group and steady with nothing assigned, and its statistics show no partition of
    /// the subscribed topics: other members hold them, or the topics have no partitions (missing, not yet
    /// created, not readable). librdkafka's statistics list a topic's partitions only once the client
    /// uses them, so the two cannot be told apart here.
    case noPartitions
    /// The member is joining the group (`cgrp.join_state` not `steady`): the coordinator holds a JoinGroup
    /// until every member has rejoined or left; a member that stopped without leaving (killed, or stopped
    /// before its first assignment) holds it until its `session.timeout.ms`.
    case rebalancing(joinState: String)
    /// The member is in the group and steady with nothing assigned: other members hold every partition
    /// (more members than partitions).
    case otherMembersHoldThem(partitions: Int)

    /// The diagnosis from the consumer's latest statistics and their age.
    /// - Parameters:
    ///   - statistics: the latest report and its age, or `nil` before the first (or with statistics off).
    ///   - statisticsIntervalMs: the consumer's `statistics.interval.ms` (0 = off).
    ///   - subscribedTopics: the topics the service subscribes to.
    static func diagnose(statistics: (statistics: KafkaStatistics, age: Duration)?, statisticsIntervalMs: Int, subscribedTopics: [String]) -> UnassignedDiagnosis {
        guard statisticsIntervalMs > 0, let (latest, age) = statistics else { return .noStatistics }
        if age > .milliseconds(3 * statisticsIntervalMs + 1000) { return .statisticsStale }
        if latest.brokersUp == 0 { return .brokersUnreachable }
        let group = latest.consumerGroup
        if let group, group.state != "up" { return .coordinatorUnavailable(state: group.state) }
        if let group, group.joinState != "steady" { return .rebalancing(joinState: group.joinState) }
        let subscribed = Set(subscribedTopics)
        let partitions = latest.partitions.filter { subscribed.contains($0.topic) }.count
        if partitions == 0 { return .noPartitions }
        return .otherMembersHoldThem(partitions: partitions)
    }

    /// A short name of the cause, for the log's `cause` field: `unknown`, `statisticsStale`,
    /// `brokerUnreachable`, `coordinatorUnavailable`, `otherMembersOrNoPartitions`, `groupRebalancing`,
    /// `otherMembersHoldThem`.
    var name: String {
        switch self {
        case .noStatistics: "unknown"
        case .statisticsStale: "statisticsStale"
        case .brokersUnreachable: "brokerUnreachable"
        case .coordinatorUnavailable: "coordinatorUnavailable"
        case .noPartitions: "otherMembersOrNoPartitions"
        case .rebalancing: "groupRebalancing"
        case .otherMembersHoldThem: "otherMembersHoldThem"
        }
    }

    /// What the cause means and what to check, in a sentence.
    /// - Parameters:
    ///   - sessionTimeoutMs: the consumer's `session.timeout.ms` (librdkafka's default 45000).
    ///   - maxPollIntervalMs: the consumer's `max.poll.interval.ms` (librdkafka's default 300000): librdkafka
    ///     sends a JoinGroup the coordinator has not answered again after it plus 3 s.
    func explanation(sessionTimeoutMs: Int, maxPollIntervalMs: Int = 300_000) -> String {
        switch self {
        case .noStatistics:
            "cause unknown: librdkafka statistics are off (statistics.interval.ms is 0; pushworker sets 5000 while the HTTP server is enabled); likely causes: the group is rebalancing, another member holds the partitions, the broker is unreachable, or the topics have no partitions"
        case .statisticsStale:
            "the consumer's statistics have stopped arriving: its poll thread may be stuck (see /healthz)"
        case .brokersUnreachable:
            "no connection to any broker is up: check bootstrap.servers, the network and the security settings"
        case .coordinatorUnavailable(let state):
            "the brokers are reachable but the group coordinator is not (consumer group state \(state))"
        case .noPartitions:
            "the member is in the group but was given nothing: other members hold every partition, or the subscribed topics have no partitions (missing or not yet created: check inputTopics; librdkafka then logs 'Subscribed topic not available')"
        case .rebalancing(let joinState):
            "the group is rebalancing (join state \(joinState)): the coordinator assigns partitions once every member has rejoined or left and the leader has sent the assignment; a member that stopped without leaving the group (killed, or stopped before its first assignment) holds the rebalance for up to its session.timeout.ms (\(sessionTimeoutMs) ms here); a JoinGroup the coordinator never answers is sent again after max.poll.interval.ms + 3 s (\(maxPollIntervalMs + 3000) ms here)"
        case .otherMembersHoldThem(let partitions):
            "other members of the group hold every partition (\(partitions) across the subscribed topics): the group has more members than partitions"
        }
    }
}
