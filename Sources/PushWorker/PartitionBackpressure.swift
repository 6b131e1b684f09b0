import PushWorkerKafka

/// Which assigned partitions the consumer pauses so that unfinished records stay near
/// ``ServiceConfiguration/maxBufferedRecords``, while every partition keeps its share of that room (pure
/// logic: the consumer loop feeds it counts each round and pauses and resumes what it says).
///
/// Each assigned partition's **share** is `maxBuffered ÷ assigned partitions`. While the member's
/// unfinished records (all partitions) stay below `maxBuffered`, nothing is paused for room: a busy
/// partition may use what idle ones leave. Once they reach it, the partitions at or above their share are
/// paused; those below it go on being read, so that a partition newly assigned to a saturated member
/// (none of its records unfinished) is read at once instead of waiting behind the others' backlog. A
/// paused partition resumes once its own unfinished records fall below half its share, or the member's
/// below half of `maxBuffered`.
///
/// The bound it keeps: `maxBuffered`, passed only while partitions below their share are read, each up
/// to its share: at most twice `maxBuffered` (when the assignment grows while the member is full), plus
/// one poll batch.
struct PartitionBackpressure: Sendable {
    let maxBuffered: Int
    /// The partitions paused for room.
    private(set) var paused: Set<TopicPartition> = []

    init(maxBuffered: Int) {
        self.maxBuffered = max(1, maxBuffered)
    }

    /// The share of each of `assignedCount` partitions (at least 1).
    func share(assignedCount: Int) -> Int {
        max(1, maxBuffered / max(1, assignedCount))
    }

    /// One round: decides from the unfinished records of each partition which of `assigned` to pause for
    /// room and which of those paused to resume.
    /// - Parameters:
    ///   - outstanding: unfinished records by partition (missing: none).
    ///   - assigned: the partitions this member holds.
    /// - Returns: the partitions to pause now and the ones to resume now (each paused or resumed once).
    mutating func round(outstanding: [TopicPartition: Int], assigned: Set<TopicPartition>) -> (pause: Set<TopicPartition>, resume: Set<TopicPartition>) {
        paused.formIntersection(assigned)
        let total = outstanding.values.reduce(0, +)
        let share = share(assignedCount: assigned.count)
        var pause: Set<TopicPartition> = []
        var resume: Set<TopicPartition> = []
        for partition in paused {
            let own = outstanding[partition] ?? 0
            if own < share / 2 || total < maxBuffered / 2 { resume.insert(partition) }
        }
        paused.subtract(resume)
        if total >= maxBuffered {
            for partition in assigned where !paused.contains(partition) && (outstanding[partition] ?? 0) >= share {
                pause.insert(partition)
            }
            paused.formUnion(pause)
        }
        return (pause, resume)
    }

    /// Forgets partitions no longer assigned.
    mutating func forget(_ partitions: [TopicPartition]) {
        paused.subtract(partitions)
    }
}
