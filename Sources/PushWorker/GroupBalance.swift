/// How the consumer group's partitions are spread over its live members, read from their snapshots
/// (``MemberStatus``), and what looks wrong: the flags the status page shows under "Group", that
/// `/status.json` lists under `group.balance`, and that `pushworker_group_balance_flags` counts.
///
/// A pure value: ``StatusBoard`` makes one from the members it has heard from (this one included) for
/// each document and each sample. A flag describes one moment; during a rebalance, or while a new
/// member's first snapshot has not arrived yet, a flag can be raised for a few seconds in a group that
/// is fine. A flag that stays is what to act on.
struct GroupBalance: Sendable, Equatable, Codable {
    /// What a flag says.
    enum Kind: String, Sendable, Codable, CaseIterable {
        /// A member holds no partition of any input topic while the group has input lag: it could take
        /// part of the backlog but has none to take.
        case idleMember
        /// An input topic has fewer partitions than the group has members: the members beyond the
        /// partition count hold none of it.
        case surplusMembers
        /// A subscribed topic's partitions are spread unevenly: one member holds at least 2 more of them
        /// than another (a balanced group differs by at most 1).
        case skew
    }

    /// One raised flag.
    struct Flag: Sendable, Equatable, Codable {
        /// What it says.
        var kind: Kind
        /// The topic it is about; `nil` for ``Kind/idleMember`` (all input topics).
        var topic: String?
        /// The instance ids of the members concerned, sorted: the idle members (``Kind/idleMember``), the
        /// members holding none of ``topic`` (``Kind/surplusMembers``), the members holding the most and
        /// the fewest of ``topic`` (``Kind/skew``).
        var members: [String]
        /// The figure: the group's input lag in records (``Kind/idleMember``), members beyond the
        /// partition count (``Kind/surplusMembers``), the most minus the fewest partitions held (``Kind/skew``).
        var amount: Double
        /// The sentence the page shows, naming the members and the topic.
        var message: String
    }

    /// One member as the balance sees it.
    struct Member: Sendable, Equatable {
        /// Its instance id (``MemberStatus/instanceId``).
        var instanceId: String
        /// The partitions it holds, as `topic[partition]` (``MemberStatus/assignment``).
        var assignment: [String]
        /// Records behind the end of its partitions of the input topics.
        var inputLag: Double
        /// The partition count of each topic its librdkafka statistics know (empty when none).
        var partitionCounts: [String: Int] = [:]

        /// The member of a snapshot. A snapshot without ``MemberStatus/inputLag`` (from a pushworker that
        /// did not publish it) counts its whole ``MemberStatus/lag`` as input lag.
        init(_ status: MemberStatus) {
            self.init(instanceId: status.instanceId, assignment: status.assignment, inputLag: status.inputLag ?? status.lag,
                      partitionCounts: status.partitionCounts ?? [:])
        }

        /// A member from its parts.
        init(instanceId: String, assignment: [String], inputLag: Double, partitionCounts: [String: Int] = [:]) {
            self.instanceId = instanceId
            self.assignment = assignment
            self.inputLag = inputLag
            self.partitionCounts = partitionCounts
        }
    }

    /// The input topics, as configured on the member that made this.
    var inputTopics: [String]
    /// The partition count of each subscribed topic as far as the group knows it: the most any member's
    /// statistics report, and at least as many as the members hold together. A topic that no member holds
    /// or knows is left out (its count is unknown, so ``Kind/surplusMembers`` is not decided for it).
    var partitions: [String: Int]
    /// The number of members looked at.
    var members: Int
    /// The group's input lag: the sum of the members' input lag.
    var inputLag: Double
    /// The raised flags: idle members first, then per input topic the surplus, then per topic the skew.
    /// Empty for a balanced group.
    var flags: [Flag]

    /// Looks at `members`.
    /// - Parameters:
    ///   - members: the live members, this one included.
    ///   - inputTopics: the input topics (``ServiceConfiguration/inputTopics``).
    ///   - topics: every subscribed topic (the input topics and the retry topic), checked for skew; the
    ///     input topics are added when missing.
    init(members: [Member], inputTopics: [String], topics: [String] = []) {
        var allTopics = inputTopics
        for topic in topics where !allTopics.contains(topic) { allTopics.append(topic) }
        let inputSet = Set(inputTopics)
        let ordered = members.sorted { $0.instanceId < $1.instanceId }
        // Partitions held, by member and topic.
        let held: [[String: Set<Int32>]] = ordered.map { member in
            var byTopic: [String: Set<Int32>] = [:]
            for name in member.assignment {
                guard let (topic, partition) = Self.split(name) else { continue }
                byTopic[topic, default: []].insert(partition)
            }
            return byTopic
        }
        var partitions: [String: Int] = [:]
        for topic in allTopics {
            let union = held.reduce(into: Set<Int32>()) { $0.formUnion($1[topic] ?? []) }
            let reported = ordered.compactMap { $0.partitionCounts[topic] }.max() ?? 0
            let count = max(union.count, reported)
            if count > 0 { partitions[topic] = count }
        }
        let inputLag = ordered.reduce(0) { $0 + max(0, $1.inputLag) }
        var flags: [Flag] = []

        let idle = zip(ordered, held).filter { _, byTopic in !byTopic.contains { inputSet.contains($0.key) && !$0.value.isEmpty } }.map(\.0.instanceId)
        if inputLag > 0 && !idle.isEmpty && !inputTopics.isEmpty {
            let who = idle.count == 1 ? "member \(idle[0]) holds" : "members \(idle.joined(separator: ", ")) hold"
            flags.append(Flag(kind: .idleMember, topic: nil, members: idle, amount: inputLag,
                              message: "\(who) no input partition while the group has \(Self.figure(inputLag)) records of input lag"))
        }

        for topic in inputTopics {
            guard let count = partitions[topic], ordered.count > count else { continue }
            let surplus = ordered.count - count
            let without = zip(ordered, held).filter { ($0.1[topic] ?? []).isEmpty }.map(\.0.instanceId)
            var message = "\(ordered.count) members share the \(Self.plural(count, "partition")) of \(topic): "
                + "\(Self.plural(surplus, "member")) beyond the partition count"
            if !without.isEmpty { message += "; holding none of it: \(without.joined(separator: ", "))" }
            flags.append(Flag(kind: .surplusMembers, topic: topic, members: without, amount: Double(surplus), message: message))
        }

        if ordered.count > 1 {
            for topic in allTopics {
                let counts = held.map { $0[topic]?.count ?? 0 }
                guard let most = counts.max(), let fewest = counts.min(), most - fewest > 1 else { continue }
                let top = zip(ordered, counts).filter { $0.1 == most }.map(\.0.instanceId)
                let bottom = zip(ordered, counts).filter { $0.1 == fewest }.map(\.0.instanceId)
                let message = "\(topic) is spread unevenly: \(Self.holding(top, most)), \(Self.holding(bottom, fewest)) "
                    + "(a difference of \(most - fewest); balanced is at most 1)"
                flags.append(Flag(kind: .skew, topic: topic, members: (top + bottom).sorted(), amount: Double(most - fewest), message: message))
            }
        }

        self.inputTopics = inputTopics
        self.partitions = partitions
        self.members = ordered.count
        self.inputLag = inputLag
        self.flags = flags
    }

    /// The value of `pushworker_group_balance_flags{flag}` for `kind`: the number of idle members
    /// (``Kind/idleMember``), the most members beyond any input topic's partition count
    /// (``Kind/surplusMembers``), the number of unevenly spread topics (``Kind/skew``); 0 when not raised.
    func gauge(_ kind: Kind) -> Double {
        let raised = flags.filter { $0.kind == kind }
        switch kind {
        case .idleMember: return Double(raised.reduce(0) { $0 + $1.members.count })
        case .surplusMembers: return raised.map(\.amount).max() ?? 0
        case .skew: return Double(raised.count)
        }
    }

    /// The topic and partition of a `topic[partition]` name, or `nil` when it is not one.
    static func split(_ name: String) -> (topic: String, partition: Int32)? {
        guard name.hasSuffix("]"), let open = name.lastIndex(of: "[") else { return nil }
        let topic = String(name[..<open])
        let number = name[name.index(after: open)..<name.index(before: name.endIndex)]
        guard !topic.isEmpty, let partition = Int32(number) else { return nil }
        return (topic, partition)
    }

    /// A count of records for a sentence: whole, with a space between groups of three digits (`1 234`).
    static func figure(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return "\(value)" }
        let whole = Int64(value.rounded())
        var digits = String(abs(whole))
        var groups: [String] = []
        while digits.count > 3 {
            groups.insert(String(digits.suffix(3)), at: 0)
            digits.removeLast(3)
        }
        groups.insert(digits, at: 0)
        return (whole < 0 ? "-" : "") + groups.joined(separator: " ")
    }

    /// "a holds 3 partitions" or "a, b hold 3 partitions each".
    private static func holding(_ members: [String], _ count: Int) -> String {
        members.count == 1 ? "\(members[0]) holds \(plural(count, "partition"))"
            : "\(members.joined(separator: ", ")) hold \(plural(count, "partition")) each"
    }

    private static func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}
