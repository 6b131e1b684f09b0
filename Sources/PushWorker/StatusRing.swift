/// A fixed-capacity ring of the newest elements: appending to a full ring drops the oldest. The status
/// page's history (samples, failed results) lives in these, so its memory never grows with the run time.
struct StatusRing<Element> {
    private var storage: [Element] = []
    private var next = 0
    /// The most elements kept (at least 1).
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage.reserveCapacity(self.capacity)
    }

    var count: Int { storage.count }

    /// Appends `element`, dropping the oldest when full.
    mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[next] = element
        }
        next = (next + 1) % capacity
    }

    /// The elements, oldest first.
    var elements: [Element] {
        storage.count < capacity ? storage : Array(storage[next...] + storage[..<next])
    }

    /// The newest element, or `nil` when empty.
    var last: Element? {
        storage.isEmpty ? nil : storage[(next + capacity - 1) % capacity]
    }
}
