import PushWorkerKafka
import PushWorkerTesting
import Testing
@testable import PushWorker

/// `PartitionBackpressure`: room for unfinished records shared by partition (issue 23: a partition newly
/// assigned to a saturated member is read at once instead of waiting behind the others' backlog).
@Suite struct PartitionBackpressureTests {
    static func tp(_ n: Int32, _ topic: String = "pushes") -> TopicPartition { TopicPartition(topic: topic, partition: n) }

    @Test func belowTheBoundNothingIsPausedEvenForOneBusyPartition() {
        var room = PartitionBackpressure(maxBuffered: 1000)
        let change = room.round(outstanding: [Self.tp(0): 999], assigned: [Self.tp(0), Self.tp(1), Self.tp(2), Self.tp(3)])
        #expect(change.pause.isEmpty && change.resume.isEmpty && room.paused.isEmpty)
    }

    @Test func atTheBoundOnlyPartitionsAtTheirShareArePaused() {
        var room = PartitionBackpressure(maxBuffered: 1000)
        let assigned: Set = [Self.tp(0), Self.tp(1), Self.tp(2), Self.tp(3)]
        // Share 250: partitions 0 and 1 hold more, 2 holds less, 3 was just assigned and holds nothing.
        let change = room.round(outstanding: [Self.tp(0): 500, Self.tp(1): 400, Self.tp(2): 100], assigned: assigned)
        #expect(change.pause == [Self.tp(0), Self.tp(1)])
        #expect(room.paused == [Self.tp(0), Self.tp(1)])
        // Still full: nothing changes while partition 0 drains to 200 (above half its share).
        let later = room.round(outstanding: [Self.tp(0): 200, Self.tp(1): 400, Self.tp(2): 200, Self.tp(3): 200], assigned: assigned)
        #expect(later.pause.isEmpty && later.resume.isEmpty)
        // Partition 0 below half its share resumes while the member is still full.
        let drained = room.round(outstanding: [Self.tp(0): 124, Self.tp(1): 400, Self.tp(2): 240, Self.tp(3): 240], assigned: assigned)
        #expect(drained.resume == [Self.tp(0)] && drained.pause.isEmpty)
        // The member below half the bound: every paused partition resumes.
        let empty = room.round(outstanding: [Self.tp(1): 400], assigned: assigned)
        #expect(empty.resume == [Self.tp(1)] && room.paused.isEmpty)
    }

    @Test func revokedPartitionsAreForgotten() {
        var room = PartitionBackpressure(maxBuffered: 100)
        _ = room.round(outstanding: [Self.tp(0): 100], assigned: [Self.tp(0), Self.tp(1)])
        #expect(room.paused == [Self.tp(0)])
        room.forget([Self.tp(0)])
        #expect(room.paused.isEmpty)
        // Not assigned any more: dropped without a resume.
        _ = room.round(outstanding: [Self.tp(1): 100], assigned: [Self.tp(1)])
        let change = room.round(outstanding: [:], assigned: [Self.tp(1)])
        #expect(change.resume == [Self.tp(1)])
    }

    /// A seeded simulation of a saturated member: each round the consumer takes up to a batch from the
    /// partitions not paused (those with a backlog), the worker finishes a fixed number of the oldest
    /// records across partitions in turn, and partitions are assigned and revoked now and then. The
    /// member's unfinished records never pass twice the bound plus a batch, and a partition holding
    /// nothing (one just assigned among them) is never paused, so it is read in the next round.
    @Test(arguments: [7, 11, 2026]) func aSaturatedMemberStaysBoundedAndServesNewPartitions(seed: UInt64) async {
        var random = SeededGenerator(seed: seed)
        let maxBuffered = 5000
        let batch = 500
        var room = PartitionBackpressure(maxBuffered: maxBuffered)
        var assigned: Set<TopicPartition> = Set((0..<4).map { Self.tp(Int32($0)) })
        var outstanding: [TopicPartition: Int] = [:]
        for round in 0..<3000 {
            if round % 64 == 0 { await Task.yield() }  // CPU-bound: other tests get this pool thread now and then
            if random.next() % 100 == 0 {
                let partition = Self.tp(Int32(random.next() % 12))
                if assigned.contains(partition) && assigned.count > 1 {
                    assigned.remove(partition)
                    outstanding[partition] = nil
                    room.forget([partition])
                } else if !assigned.contains(partition) {
                    assigned.insert(partition)
                }
            }
            // Every partition has an endless backlog; the consumer takes from those not paused.
            let readable = assigned.subtracting(room.paused).sorted { $0.partition < $1.partition }
            if !readable.isEmpty {
                for (n, partition) in readable.enumerated() {
                    outstanding[partition, default: 0] += batch / readable.count + (n < batch % readable.count ? 1 : 0)
                }
            }
            // The worker finishes 300 a round, in turn over the partitions.
            var finished = 300
            while finished > 0, let partition = outstanding.filter({ $0.value > 0 }).keys.randomElement(using: &random) {
                let take = min(finished, outstanding[partition] ?? 0, 50)
                outstanding[partition, default: 0] -= take
                finished -= take
            }
            outstanding = outstanding.filter { $0.value > 0 }
            _ = room.round(outstanding: outstanding, assigned: assigned)
            let total = outstanding.values.reduce(0, +)
            #expect(total <= 2 * maxBuffered + batch, "seed \(seed) round \(round): \(total) unfinished")
            for partition in room.paused {
                #expect((outstanding[partition] ?? 0) > 0, "seed \(seed) round \(round): \(partition) paused holding nothing")
            }
        }
    }
}
