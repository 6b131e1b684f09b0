import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// What the status page knows: the sampled history, the recent `failed` results, this member's identity
/// and the other members of the group heard from on the status topic. Bounded: fixed rings of
/// ``StatusPageConfiguration/samples`` samples and ``StatusPageConfiguration/failures`` failures, and one
/// entry per live member.
///
/// Fed by the sampler (every ``StatusPageConfiguration/sampleInterval``), by the status topic reader, and
/// by the service for each `failed` result (one lock per failed result; nothing for other results). One
/// `Mutex` for all of it.
final class StatusBoard: Sendable {
    private struct State {
        var previous: MetricsReading?
        var samples: StatusRing<StatusSample>
        var failures: StatusRing<FailedResultEntry>
        var load: [JobDispatcher.TypeLoad] = []
        var assignment: [String] = []
        /// This member's lag on the input topics' partitions, from the latest reading.
        var inputLag: Double = 0
        /// The partition count of each subscribed topic, from the consumer's latest statistics.
        var partitionCounts: [String: Int] = [:]
        var memberId: String?
        /// When the assignment last became empty (``WallClock/monotonicNs()``), `nil` while assigned.
        var unassignedSinceNs: Int64?
        /// Other members by instance id: their latest snapshot and when it arrived here (monotonic ns).
        var members: [String: (status: MemberStatus, seenNs: Int64)] = [:]
        var publishProblem: String?
        var readProblem: String?
    }

    let settings: StatusPageConfiguration
    let groupId: String
    let instanceId: String
    let host: String
    let pid: Int32
    let startedAtMs: Int64
    /// The input topics (``ServiceConfiguration/inputTopics``): their lag is this member's ``MemberStatus/inputLag``,
    /// and a member holding none of their partitions is idle (``GroupBalance``).
    let inputTopics: [String]
    /// Every subscribed topic (the input topics and the retry topic), checked for skew (``GroupBalance``).
    let subscribedTopics: [String]
    /// Whether the plotting library's files were found (set once the HTTP server has loaded them).
    let plotsAvailable = Atomic<Bool>(false)
    private let state: Mutex<State>

    /// Creates an empty board for a member of `groupId` that reads `inputTopics` and subscribes
    /// `subscribedTopics` (the input topics when empty); `nowNs` is the start (it waits for partitions from then).
    init(settings: StatusPageConfiguration, groupId: String, inputTopics: [String] = [], subscribedTopics: [String] = [],
         host: String = ProcessInfo.processInfo.hostName, pid: Int32 = ProcessInfo.processInfo.processIdentifier,
         nowNs: Int64 = WallClock.monotonicNs(), nowMs: Int64 = WallClock.nowMs()) {
        self.settings = settings
        self.groupId = groupId
        self.inputTopics = inputTopics
        self.subscribedTopics = subscribedTopics.isEmpty ? inputTopics : subscribedTopics
        self.host = host
        self.pid = pid
        self.startedAtMs = nowMs
        self.instanceId = "\(host)-\(pid)-\(UUID().uuidString.prefix(8).lowercased())"
        var initial = State(samples: StatusRing(capacity: settings.samples), failures: StatusRing(capacity: settings.failures))
        initial.unassignedSinceNs = nowNs
        state = Mutex(initial)
    }

    /// Remembers a `failed` result for the table.
    func recordFailed(_ result: ResultRecord) {
        let entry = FailedResultEntry(result)
        state.withLock { $0.failures.append(entry) }
    }

    /// Takes a sample: the interval since the previous reading (the first reading only starts the history).
    /// `partitionCounts` is the partition count of each topic the consumer's statistics list.
    func takeSample(_ reading: MetricsReading, load: [JobDispatcher.TypeLoad], assignment: Set<TopicPartition>, memberId: String?,
                    partitionCounts: [String: Int] = [:], nowNs: Int64 = WallClock.monotonicNs()) {
        let names = Self.names(assignment)
        let inputs = Set(inputTopics)
        let inputLag = reading.lag.reduce(0.0) { sum, entry in
            guard let (topic, _) = GroupBalance.split(entry.key), inputs.contains(topic) else { return sum }
            return sum + entry.value
        }
        state.withLock { state in
            state.partitionCounts = partitionCounts
            if let previous = state.previous {
                state.samples.append(StatusSample(from: previous, to: reading, load: load, assignedPartitions: names.count))
                // As the total lag: the latest sample's.
                state.inputLag = inputLag
            }
            state.previous = reading
            state.load = load
            state.memberId = memberId
            Self.note(names, in: &state, nowNs: nowNs)
        }
    }

    /// Takes a snapshot another member published (or this one, read back: ignored). Snapshots of other
    /// groups, and ones made longer than ``StatusPageConfiguration/memberTimeout`` ago by the sender's
    /// clock (old records read at start), are ignored.
    func received(_ status: MemberStatus, nowNs: Int64 = WallClock.monotonicNs(), nowMs: Int64 = WallClock.nowMs()) {
        guard status.groupId == groupId, status.instanceId != instanceId,
              nowMs - status.sentAtMs <= settings.memberTimeout.wholeMilliseconds else { return }
        state.withLock { state in
            if let known = state.members[status.instanceId], known.status.sentAtMs > status.sentAtMs { return }
            state.members[status.instanceId] = (status, nowNs)
            Self.prune(&state, nowNs: nowNs, timeout: settings.memberTimeout)
        }
    }

    /// Says why this member's snapshot cannot be written to the status topic now, or `nil` once it can.
    func publishProblem(_ problem: String?) {
        state.withLock { $0.publishProblem = problem }
    }

    /// Says why the status topic cannot be read now, or `nil` once it can.
    func readProblem(_ problem: String?) {
        state.withLock { $0.readProblem = problem }
    }

    /// This member's snapshot now.
    func ownStatus(nowMs: Int64 = WallClock.nowMs()) -> MemberStatus {
        state.withLock { ownStatus(in: $0, nowMs: nowMs) }
    }

    /// How the group's partitions are spread over the live members now (this one as of its latest sample):
    /// what `pushworker_group_balance_flags` is set from after each sample.
    func balance(nowNs: Int64 = WallClock.monotonicNs(), nowMs: Int64 = WallClock.nowMs()) -> GroupBalance {
        let members = state.withLock { state in
            Self.prune(&state, nowNs: nowNs, timeout: settings.memberTimeout)
            return liveMembers(in: state, nowNs: nowNs, nowMs: nowMs)
        }
        return balance(of: members)
    }

    /// The document of `/status.json`, with the assignment as the consumer has it now.
    func document(assignment: Set<TopicPartition>, nowNs: Int64 = WallClock.monotonicNs(), nowMs: Int64 = WallClock.nowMs()) -> StatusDocument {
        let names = Self.names(assignment)
        return state.withLock { state in
            Self.note(names, in: &state, nowNs: nowNs)
            Self.prune(&state, nowNs: nowNs, timeout: settings.memberTimeout)
            let members = liveMembers(in: state, nowNs: nowNs, nowMs: nowMs)
            let own = members.first { $0.isSelf }?.status ?? ownStatus(in: state, nowMs: nowMs)
            let statuses = members.map(\.status)
            let totals = StatusDocument.Totals(
                members: members.count,
                recordsPerSecond: statuses.reduce(0) { $0 + $1.recordsPerSecond },
                resultsPerSecond: statuses.reduce(0) { $0 + $1.resultsPerSecond },
                failedPerSecond: statuses.reduce(0) { $0 + $1.failedPerSecond },
                jobsRunning: statuses.reduce(0) { $0 + $1.jobsRunning },
                jobsWaiting: statuses.reduce(0) { $0 + $1.jobsWaiting },
                resultsWaiting: statuses.reduce(0) { $0 + $1.resultsWaiting },
                lag: statuses.reduce(0) { $0 + $1.lag },
                assignedPartitions: statuses.reduce(0) { $0 + $1.assignment.count })
            let jobs = state.load.map { load in
                StatusDocument.JobRow(type: StatusSample.typeKey(load.type), running: load.running, waiting: load.waiting,
                                      oldestRunningSeconds: load.oldestRunningAge.map { Double($0.wholeMilliseconds) / 1000 })
            }
            return StatusDocument(
                generatedAtMs: nowMs, member: own,
                waitingForPartitionsSeconds: state.unassignedSinceNs.map { Double(max(0, nowNs - $0)) / 1e9 },
                sampleIntervalSeconds: Double(settings.sampleInterval.wholeMilliseconds) / 1000,
                samples: state.samples.elements, jobs: jobs, failures: state.failures.elements.reversed(),
                group: StatusDocument.Group(
                    groupId: groupId, statusTopic: settings.topic,
                    publishIntervalSeconds: Double(settings.publishInterval.wholeMilliseconds) / 1000,
                    memberTimeoutSeconds: Double(settings.memberTimeout.wholeMilliseconds) / 1000,
                    members: members, totals: totals, balance: balance(of: members), statusTopicProblem: [state.publishProblem, state.readProblem].compactMap { $0 }.joined(separator: "; ").nilIfEmpty),
                plots: StatusDocument.Plots(library: "dygraphs", available: plotsAvailable.load(ordering: .relaxed), path: settings.dygraphsPath))
        }
    }

    /// The live members, this one first made from `state`, sorted by host and instance id.
    private func liveMembers(in state: State, nowNs: Int64, nowMs: Int64) -> [StatusDocument.Member] {
        var members = [StatusDocument.Member(status: ownStatus(in: state, nowMs: nowMs), lastSeenSecondsAgo: 0, isSelf: true)]
        for (status, seenNs) in state.members.values {
            members.append(StatusDocument.Member(status: status, lastSeenSecondsAgo: Double(max(0, nowNs - seenNs)) / 1e9, isSelf: false))
        }
        members.sort { ($0.status.host, $0.status.instanceId) < ($1.status.host, $1.status.instanceId) }
        return members
    }

    private func balance(of members: [StatusDocument.Member]) -> GroupBalance {
        GroupBalance(members: members.map { GroupBalance.Member($0.status) }, inputTopics: inputTopics, topics: subscribedTopics)
    }

    private func ownStatus(in state: State, nowMs: Int64) -> MemberStatus {
        let latest = state.samples.last
        let results = latest?.resultsPerSecond ?? [:]
        return MemberStatus(
            instanceId: instanceId, groupId: groupId, memberId: state.memberId, host: host, pid: pid,
            version: PushWorkerService.version, startedAtMs: startedAtMs, sentAtMs: nowMs, assignment: state.assignment,
            recordsPerSecond: latest?.recordsPerSecond ?? 0,
            resultsPerSecond: results.values.reduce(0, +),
            failedPerSecond: results.filter { $0.key.hasSuffix("/failed") }.values.reduce(0, +),
            jobsRunning: state.load.reduce(0) { $0 + $1.running }, jobsWaiting: state.load.reduce(0) { $0 + $1.waiting },
            resultsWaiting: latest?.resultsWaiting ?? 0, lag: latest?.lag.values.reduce(0, +) ?? 0,
            inputLag: state.inputLag, partitionCounts: state.partitionCounts)
    }

    private static func names(_ assignment: Set<TopicPartition>) -> [String] {
        assignment.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }.map(\.description)
    }

    private static func note(_ assignment: [String], in state: inout State, nowNs: Int64) {
        state.assignment = assignment
        if assignment.isEmpty {
            if state.unassignedSinceNs == nil { state.unassignedSinceNs = nowNs }
        } else {
            state.unassignedSinceNs = nil
        }
    }

    private static func prune(_ state: inout State, nowNs: Int64, timeout: Duration) {
        let limitNs = timeout.wholeNanoseconds
        state.members = state.members.filter { nowNs - $0.value.seenNs <= limitNs }
    }
}

extension String {
    /// `nil` for the empty string, else itself.
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
