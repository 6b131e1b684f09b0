/// A queue that takes turns between lanes: each lane is first-in first-out, and the lanes that hold
/// elements give one element each in turn (round robin), so that a lane with a long backlog does not hold
/// up the first element of another. The dispatcher's lanes are input partitions (``PartitionLane``): a
/// partition newly assigned to a busy member starts its records within one turn of every other
/// partition's, instead of behind everything taken before it.
///
/// Appending to and taking from the front cost O(1) amortized (a lane is found by hashing once, or not at
/// all when it is the lane of the previous append).
struct FairQueue<Lane: Hashable, Element> {
    private var queues: [FIFOQueue<Element>] = []
    private var index: [Lane: Int] = [:]
    /// The lanes holding elements, each once, in turn order.
    private var turns = FIFOQueue<Int>()
    /// The lane of the last append and its position (most appends come in runs of one partition).
    private var lastLane: (lane: Lane, position: Int)?
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds `element` at the back of `lane`; a lane that was empty takes its turn after the others.
    mutating func append(_ element: Element, lane: Lane) {
        let position = self.position(of: lane)
        if queues[position].isEmpty { turns.append(position) }
        queues[position].append(element)
        count += 1
    }

    /// Takes the front element of the lane whose turn it is; that lane's next turn comes after the others'.
    mutating func popFirst() -> Element? {
        guard let position = turns.popFirst(), let element = queues[position].popFirst() else { return nil }
        if !queues[position].isEmpty { turns.append(position) }
        count -= 1
        return element
    }

    /// Calls `body` with every element (lane by lane, each lane front first).
    func forEach(_ body: (Element) -> Void) {
        for queue in queues { queue.forEach(body) }
    }

    /// Removes every element for which `shouldRemove` is true, keeping the order of the rest and the
    /// turns of the lanes that still hold elements.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        for position in queues.indices where !queues[position].isEmpty {
            removed += queues[position].removeAll(where: shouldRemove)
        }
        guard !removed.isEmpty else { return [] }
        count -= removed.count
        var kept = FIFOQueue<Int>()
        while let position = turns.popFirst() {
            if !queues[position].isEmpty { kept.append(position) }
        }
        turns = kept
        return removed
    }

    private mutating func position(of lane: Lane) -> Int {
        if let last = lastLane, last.lane == lane { return last.position }
        let position: Int
        if let known = index[lane] {
            position = known
        } else {
            position = queues.count
            queues.append(FIFOQueue())
            index[lane] = position
        }
        lastLane = (lane, position)
        return position
    }
}

/// The lane of a record in the dispatcher's ``FairQueue``s: the partition it was read from.
struct PartitionLane: Hashable, Sendable {
    var topic: String
    var partition: Int32

    init(_ source: RecordSource) {
        topic = source.topic
        partition = source.partition
    }
}
