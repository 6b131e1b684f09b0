import PushWorkerKafka
import Synchronization

/// Tracks, per partition, which taken records have their result acknowledged, and yields the offset that
/// may be committed: one past the highest offset whose result and all earlier results are acknowledged
/// (contract section 4).
///
/// Records are tracked in the order they are taken (increasing offsets per partition); acknowledgements
/// may come in any order. A record taken back before its worker started (``abandon(_:)``) holds the
/// watermark below it forever: it will be read again by whoever owns the partition next.
final class OffsetTracker: Sendable {
    private enum Mark: UInt8 { case pending, done, abandoned }

    private struct Partition {
        var offsets: [Int64] = []
        var marks: [Mark] = []
        var head = 0
        /// The next offset to commit last reported, or nil.
        var committable: Int64?

        var outstanding: Int { offsets.count - head }

        mutating func append(_ offset: Int64) {
            offsets.append(offset)
            marks.append(.pending)
        }

        func index(of offset: Int64) -> Int? {
            var low = head
            var high = offsets.count - 1
            while low <= high {
                let mid = (low + high) / 2
                if offsets[mid] == offset { return mid }
                if offsets[mid] < offset { low = mid + 1 } else { high = mid - 1 }
            }
            return nil
        }

        /// Marks done and returns the new committable offset if the watermark moved.
        mutating func complete(_ offset: Int64) -> Int64? {
            guard let index = index(of: offset), marks[index] == .pending else { return nil }
            marks[index] = .done
            guard index == head else { return nil }
            while head < offsets.count, marks[head] == .done { head += 1 }
            let next = offsets[head - 1] + 1
            if head == offsets.count {
                offsets.removeAll(keepingCapacity: true)
                marks.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 4096 && head * 2 > offsets.count {
                offsets.removeFirst(head)
                marks.removeFirst(head)
                head = 0
            }
            committable = next
            return next
        }

        func settled() -> Bool {
            for index in head..<offsets.count where marks[index] == .pending { return false }
            return true
        }
    }

    private let partitions = Mutex<[TopicPartition: Partition]>([:])

    /// Tracks records just taken, in offset order per partition.
    func track(_ records: [(TopicPartition, Int64)]) {
        partitions.withLock { partitions in
            for (tp, offset) in records { partitions[tp, default: Partition()].append(offset) }
        }
    }

    /// Marks acknowledged results; returns the partitions whose committable offset moved, with it (each
    /// once, in the order they first moved).
    func complete(_ acknowledged: [(TopicPartition, Int64)]) -> [TopicPartitionOffset] {
        partitions.withLock { partitions in
            // The partitions this batch touches (a handful), each looked up in the table once: a linear
            // search of them costs less than hashing each acknowledgement's topic-partition twice (the
            // lookup and a dictionary of moved offsets: about 1.1k instructions per record, callgrind).
            // The table's indices stay valid: only its values change below, never its keys.
            var touched: [(tp: TopicPartition, index: Dictionary<TopicPartition, Partition>.Index?, moved: Int64?)] = []
            for (tp, offset) in acknowledged {
                var slot = 0
                while slot < touched.count, touched[slot].tp.partition != tp.partition || touched[slot].tp.topic != tp.topic { slot += 1 }
                if slot == touched.count { touched.append((tp, partitions.index(forKey: tp), nil)) }
                guard let index = touched[slot].index else { continue }  // not tracked (forgotten)
                if let next = partitions.values[index].complete(offset) { touched[slot].moved = next }
            }
            return touched.compactMap { entry in entry.moved.map { TopicPartitionOffset(entry.tp, offset: $0) } }
        }
    }

    /// Marks acknowledged results as ``complete(_:)`` does, and says for each position whether it was
    /// tracked and still pending (so this call completed it): an output of a record not tracked (its
    /// partition was forgotten, e.g. rewound) or already done (a second result for it) is not accepted.
    /// - Returns: one flag per position, in order, and the partitions whose committable offset moved.
    func completeEach(_ positions: [(TopicPartition, Int64)]) -> (accepted: [Bool], moved: [TopicPartitionOffset]) {
        partitions.withLock { partitions in
            var accepted: [Bool] = []
            accepted.reserveCapacity(positions.count)
            var moved: [TopicPartition: Int64] = [:]
            for (tp, offset) in positions {
                guard let index = partitions[tp]?.index(of: offset), partitions[tp]?.marks[index] == .pending else {
                    accepted.append(false)
                    continue
                }
                accepted.append(true)
                if let next = partitions[tp]?.complete(offset) { moved[tp] = next }
            }
            return (accepted, moved.map { TopicPartitionOffset($0.key, offset: $0.value) })
        }
    }

    /// Marks records taken back before their worker started.
    func abandon(_ records: [(TopicPartition, Int64)]) {
        partitions.withLock { partitions in
            for (tp, offset) in records {
                if let index = partitions[tp]?.index(of: offset) { partitions[tp]?.marks[index] = .abandoned }
            }
        }
    }

    /// Whether no record of `tps` still waits for its result.
    func settled(_ tps: [TopicPartition]) -> Bool {
        partitions.withLock { partitions in tps.allSatisfy { partitions[$0]?.settled() ?? true } }
    }

    /// Forgets partitions (revoked or lost).
    func forget(_ tps: [TopicPartition]) {
        partitions.withLock { partitions in tps.forEach { partitions[$0] = nil } }
    }

    /// Records taken whose results are not yet acknowledged, over all partitions (abandoned ones included
    /// until the partition is forgotten).
    var outstanding: Int {
        partitions.withLock { $0.values.reduce(0) { $0 + $1.outstanding } }
    }

    /// Records taken whose results are not yet acknowledged, by partition (partitions with none left out).
    var outstandingByPartition: [TopicPartition: Int] {
        partitions.withLock { partitions in
            var counts: [TopicPartition: Int] = [:]
            for (tp, partition) in partitions where partition.outstanding > 0 { counts[tp] = partition.outstanding }
            return counts
        }
    }

    /// The committable offsets of every tracked partition that has one.
    var committable: [TopicPartitionOffset] {
        partitions.withLock { partitions in
            partitions.compactMap { tp, partition in partition.committable.map { TopicPartitionOffset(tp, offset: $0) } }
        }
    }
}
