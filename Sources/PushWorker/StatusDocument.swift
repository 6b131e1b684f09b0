/// The body of `GET /status.json` (schema 1; docs/operations.md, "Status page", documents every field):
/// this member, its sampled history, its running and waiting jobs, its recent `failed` results, and the
/// live members of its consumer group read from the status topic.
struct StatusDocument: Sendable, Equatable, Codable {
    /// The schema version: 1. A field is only ever added within a version.
    var schema = 1
    /// When the document was made: milliseconds since 1970 (UTC).
    var generatedAtMs: Int64
    /// This member's own snapshot, as it publishes it.
    var member: MemberStatus
    /// Seconds this member has had no partitions assigned (since it started or since its last partition
    /// was revoked), `nil` while it has some.
    var waitingForPartitionsSeconds: Double?
    /// Seconds between samples.
    var sampleIntervalSeconds: Double
    /// The history, oldest first: at most ``StatusPageConfiguration/samples`` entries.
    var samples: [StatusSample]
    /// Jobs running and waiting now, by type.
    var jobs: [JobRow]
    /// The most recent `failed` results, newest first: at most ``StatusPageConfiguration/failures``.
    var failures: [FailedResultEntry]
    /// The consumer group, from the status topic.
    var group: Group
    /// Where the page's plotting library comes from, and whether it is there.
    var plots: Plots

    /// The jobs of one type now.
    struct JobRow: Sendable, Equatable, Codable {
        /// The payload `type` (`(none)` for records without one).
        var type: String
        /// Jobs running.
        var running: Int
        /// Jobs waiting for a slot or their key.
        var waiting: Int
        /// How long the oldest running job of the type has run, in seconds; `nil` when none runs.
        var oldestRunningSeconds: Double?
    }

    /// The live members of the group and their totals.
    struct Group: Sendable, Equatable, Codable {
        /// The consumer group.
        var groupId: String
        /// The status topic.
        var statusTopic: String
        /// Seconds between a member's snapshots.
        var publishIntervalSeconds: Double
        /// Seconds after which a member not heard from drops off.
        var memberTimeoutSeconds: Double
        /// The live members, this one included, sorted by host and instance id.
        var members: [Member]
        /// The sums over ``members``.
        var totals: Totals
        /// How the partitions are spread over ``members``, and the flags raised (``GroupBalance``).
        var balance: GroupBalance
        /// Why the status topic cannot be read or written now (e.g. it does not exist and the brokers do
        /// not create topics), `nil` when it works.
        var statusTopicProblem: String?
    }

    /// A live member.
    struct Member: Sendable, Equatable, Codable {
        /// Its latest snapshot.
        var status: MemberStatus
        /// Seconds since its latest snapshot arrived here (0 for this member).
        var lastSeenSecondsAgo: Double
        /// Whether it is the member serving this page.
        var isSelf: Bool
    }

    /// Sums over the live members.
    struct Totals: Sendable, Equatable, Codable {
        var members: Int
        var recordsPerSecond: Double
        var resultsPerSecond: Double
        var failedPerSecond: Double
        var jobsRunning: Int
        var jobsWaiting: Int
        var resultsWaiting: Double
        var lag: Double
        var assignedPartitions: Int
    }

    /// The plotting library.
    struct Plots: Sendable, Equatable, Codable {
        /// `dygraphs` (Debian `libjs-dygraphs`).
        var library: String
        /// Whether its files were found at ``path`` when the server started.
        var available: Bool
        /// The directory they are served from (``StatusPageConfiguration/dygraphsPath``).
        var path: String
    }
}
