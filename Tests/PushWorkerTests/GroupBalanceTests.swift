@testable import PushWorker
import Testing

/// The group balance flags (``GroupBalance``): an idle member while the group has input lag, more members
/// than an input topic's partitions, and partitions spread unevenly; none for a balanced group.
struct GroupBalanceTests {
    static let inputs = ["pushes"]
    static let topics = ["pushes", "retries"]

    static func member(_ id: String, _ assignment: [String], inputLag: Double = 0, counts: [String: Int] = [:]) -> GroupBalance.Member {
        GroupBalance.Member(instanceId: id, assignment: assignment, inputLag: inputLag, partitionCounts: counts)
    }

    /// The partitions `partitions` of `topic`, as `topic[partition]` names.
    static func names(_ topic: String, _ partitions: ClosedRange<Int>) -> [String] { partitions.map { "\(topic)[\($0)]" } }

    @Test func aBalancedGroupRaisesNothing() {
        // 3 members, 6 partitions of each topic: 2 of each per member, with lag.
        let members = (0..<3).map { index in
            Self.member("m\(index)", Self.names("pushes", (2 * index)...(2 * index + 1)) + Self.names("retries", (2 * index)...(2 * index + 1)),
                        inputLag: 1000)
        }
        let balance = GroupBalance(members: members, inputTopics: Self.inputs, topics: Self.topics)
        #expect(balance.flags.isEmpty, "\(balance.flags)")
        #expect(balance.partitions == ["pushes": 6, "retries": 6])
        #expect(balance.members == 3)
        #expect(balance.inputLag == 3000)
        for kind in GroupBalance.Kind.allCases { #expect(balance.gauge(kind) == 0) }
        // 7 partitions over 3 members (3, 2, 2) is as even as it gets.
        let seven = GroupBalance(members: [Self.member("a", Self.names("pushes", 0...2)), Self.member("b", Self.names("pushes", 3...4)),
                                           Self.member("c", Self.names("pushes", 5...6))], inputTopics: Self.inputs)
        #expect(seven.flags.isEmpty)
    }

    @Test func aMemberWithoutInputPartitionsIsIdleOnlyWhileTheGroupHasInputLag() throws {
        // b holds only retry partitions (what one subscription for both topics did, issue 23).
        let members = [Self.member("a", Self.names("pushes", 0...1), inputLag: 1234), Self.member("b", Self.names("retries", 0...1))]
        let balance = GroupBalance(members: members, inputTopics: Self.inputs, topics: Self.topics)
        let idle = try #require(balance.flags.first { $0.kind == .idleMember })
        #expect(idle.members == ["b"])
        #expect(idle.topic == nil)
        #expect(idle.amount == 1234)
        #expect(idle.message == "member b holds no input partition while the group has 1 234 records of input lag")
        #expect(balance.gauge(.idleMember) == 1)
        // No input lag: nothing for b to take, not idle (the skew stays).
        let caughtUp = GroupBalance(members: [Self.member("a", Self.names("pushes", 0...1)), Self.member("b", Self.names("retries", 0...1))],
                                    inputTopics: Self.inputs, topics: Self.topics)
        #expect(!caughtUp.flags.contains { $0.kind == .idleMember })
        #expect(caughtUp.gauge(.idleMember) == 0)
        // Two idle members are named in one sentence.
        let two = GroupBalance(members: [Self.member("a", Self.names("pushes", 0...3), inputLag: 5), Self.member("b", []), Self.member("c", [])],
                               inputTopics: Self.inputs)
        #expect(two.flags.first { $0.kind == .idleMember }?.message == "members b, c hold no input partition while the group has 5 records of input lag")
        #expect(two.gauge(.idleMember) == 2)
    }

    @Test func aSnapshotWithoutInputLagCountsItsWholeLag() {
        var status = StatusPageUnitTests.member("old", sentAtMs: 0)
        #expect(status.inputLag == nil)
        #expect(GroupBalance.Member(status).inputLag == 3, "its total lag")
        status.inputLag = 1
        status.partitionCounts = ["pushes": 4]
        #expect(GroupBalance.Member(status) == Self.member("old", ["pushes[0]"], inputLag: 1, counts: ["pushes": 4]))
    }

    @Test func membersBeyondAnInputTopicsPartitionCountAreSurplus() throws {
        // 3 members, 2 input partitions: c holds none of them; the retry topic is spread 1, 0, 1.
        let members = [Self.member("a", ["pushes[0]", "retries[0]"]), Self.member("b", ["pushes[1]"]), Self.member("c", ["retries[1]"])]
        let balance = GroupBalance(members: members, inputTopics: Self.inputs, topics: Self.topics)
        #expect(balance.flags.map(\.kind) == [.surplusMembers], "no lag: not idle; 1, 1, 0: no skew")
        let surplus = try #require(balance.flags.first)
        #expect(surplus.topic == "pushes")
        #expect(surplus.members == ["c"])
        #expect(surplus.amount == 1)
        #expect(surplus.message == "3 members share the 2 partitions of pushes: 1 member beyond the partition count; holding none of it: c")
        #expect(balance.gauge(.surplusMembers) == 1)
        // The retry topic is not an input topic: fewer of its partitions than members is not flagged.
        #expect(!balance.flags.contains { $0.topic == "retries" })
        // A member's statistics know the topic has 4 partitions (2 not held during a rebalance): not surplus.
        var counted = members
        counted[0].partitionCounts = ["pushes": 4]
        let four = GroupBalance(members: counted, inputTopics: Self.inputs, topics: Self.topics)
        #expect(four.partitions["pushes"] == 4)
        #expect(!four.flags.contains { $0.kind == .surplusMembers })
        // A topic nobody holds or knows has no count: surplus is not decided for it.
        let unknown = GroupBalance(members: [Self.member("a", []), Self.member("b", [])], inputTopics: Self.inputs)
        #expect(unknown.partitions.isEmpty)
        #expect(unknown.flags.isEmpty)
    }

    @Test func partitionsSpreadUnevenlyAreSkewPerTopic() throws {
        let members = [Self.member("a", Self.names("pushes", 0...4) + ["retries[0]"]), Self.member("b", ["pushes[5]"] + Self.names("retries", 1...5))]
        let balance = GroupBalance(members: members, inputTopics: Self.inputs, topics: Self.topics)
        #expect(balance.flags.map(\.kind) == [.skew, .skew])
        let pushes = try #require(balance.flags.first { $0.topic == "pushes" })
        #expect(pushes.members == ["a", "b"])
        #expect(pushes.amount == 4)
        #expect(pushes.message == "pushes is spread unevenly: a holds 5 partitions, b holds 1 partition (a difference of 4; balanced is at most 1)")
        #expect(balance.flags.contains { $0.topic == "retries" && $0.amount == 4 })
        #expect(balance.gauge(.skew) == 2)
        // A difference of 1 is balanced; one member alone is never skewed.
        #expect(GroupBalance(members: [Self.member("a", Self.names("pushes", 0...2)), Self.member("b", Self.names("pushes", 3...4))], inputTopics: Self.inputs).flags.isEmpty)
        #expect(GroupBalance(members: [Self.member("a", Self.names("pushes", 0...5))], inputTopics: Self.inputs).flags.isEmpty)
    }

    @Test func namesAndFiguresAreRead() {
        #expect(GroupBalance.split("push-retries-x[12]").map { "\($0.topic)|\($0.partition)" } == "push-retries-x|12")
        #expect(GroupBalance.split("odd[name][3]").map { "\($0.topic)|\($0.partition)" } == "odd[name]|3")
        for bad in ["pushes", "pushes[]", "[1]", "pushes[x]", "pushes[1"] { #expect(GroupBalance.split(bad) == nil, "\(bad)") }
        #expect(GroupBalance.figure(0) == "0")
        #expect(GroupBalance.figure(999) == "999")
        #expect(GroupBalance.figure(1234) == "1 234")
        #expect(GroupBalance.figure(1_234_567.4) == "1 234 567")
        #expect(GroupBalance.figure(.infinity) == "inf")
    }
}
