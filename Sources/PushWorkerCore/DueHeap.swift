/// A binary min-heap of elements by due time (monotonic nanoseconds), first-in first-out among equal
/// times: the records the dispatcher holds until their `pushworker-not-before` or retry time.
struct DueHeap<Element> {
    private struct Entry {
        var dueNs: Int64
        var order: UInt64
        var element: Element
        func precedes(_ other: Entry) -> Bool { dueNs != other.dueNs ? dueNs < other.dueNs : order < other.order }
    }

    private var entries: [Entry] = []
    private var nextOrder: UInt64 = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    /// The earliest due time, or `nil` when empty.
    var earliestDueNs: Int64? { entries.first?.dueNs }

    mutating func insert(_ element: Element, dueNs: Int64) {
        nextOrder += 1
        entries.append(Entry(dueNs: dueNs, order: nextOrder, element: element))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every element due at or before `nowNs`, earliest first.
    mutating func popDue(nowNs: Int64) -> [Element] {
        var due: [Element] = []
        while let first = entries.first, first.dueNs <= nowNs {
            due.append(first.element)
            let last = entries.removeLast()
            guard !entries.isEmpty else { break }
            entries[0] = last
            siftDown(from: 0)
        }
        return due
    }

    /// Removes and returns the elements that match, in no particular order.
    mutating func removeAll(where matches: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Entry] = []
        for entry in entries {
            if matches(entry.element) { removed.append(entry.element) } else { kept.append(entry) }
        }
        guard !removed.isEmpty else { return [] }
        entries = kept
        for index in stride(from: entries.count / 2, through: 0, by: -1) { siftDown(from: index) }
        return removed
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var smallest = left
            if left + 1 < entries.count, entries[left + 1].precedes(entries[left]) { smallest = left + 1 }
            guard entries[smallest].precedes(entries[parent]) else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
