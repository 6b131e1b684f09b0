/// The snapshot one member of the consumer group publishes to the status topic every
/// ``StatusPageConfiguration/publishInterval`` (a JSON object, keyed by ``instanceId``), and that every
/// member's page shows under "Group". No payloads, keys, headers or configuration values.
struct MemberStatus: Sendable, Equatable, Codable {
    /// This run of this member: `<host>-<pid>-<random>`, new at each start.
    var instanceId: String
    /// The consumer group (`group.id`); snapshots of other groups in the topic are ignored.
    var groupId: String
    /// The member id the group coordinator gave the consumer (`rd_kafka_memberid`), `nil` before it joined.
    var memberId: String?
    /// The host name.
    var host: String
    /// The process id.
    var pid: Int32
    /// pushworker's version.
    var version: String
    /// When the service started: milliseconds since 1970 (UTC).
    var startedAtMs: Int64
    /// When this snapshot was made: milliseconds since 1970 (UTC), the member's clock.
    var sentAtMs: Int64
    /// The partitions assigned, as `topic[partition]`, sorted.
    var assignment: [String]
    /// Records taken per second over the latest sample interval.
    var recordsPerSecond: Double
    /// Results acknowledged per second over the latest sample interval.
    var resultsPerSecond: Double
    /// `failed` results per second over the latest sample interval.
    var failedPerSecond: Double
    /// Jobs running now.
    var jobsRunning: Int
    /// Jobs waiting for a slot or their key now.
    var jobsWaiting: Int
    /// Results waiting for the broker's acknowledgement.
    var resultsWaiting: Double
    /// Records behind the end of its assigned partitions, summed.
    var lag: Double
    /// The part of ``lag`` on partitions of the input topics (the rest is the retry topic's); `nil` in
    /// the snapshot of a pushworker that did not publish it.
    var inputLag: Double?
    /// The partition count of each subscribed topic that the member's librdkafka statistics list (a
    /// client lists a topic's partitions once it holds one of them); `nil` in the snapshot of a
    /// pushworker that did not publish it.
    var partitionCounts: [String: Int]?
}
