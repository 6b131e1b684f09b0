/// A first-in first-out queue with O(1) amortized append and removal from the front.
struct FIFOQueue<Element> {
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    /// The front element, or `nil` when empty.
    var first: Element? { head < storage.count ? storage[head] : nil }

    mutating func append(_ element: Element) { storage.append(element) }

    /// Calls `body` with each element, front first.
    func forEach(_ body: (Element) -> Void) {
        for case let element? in storage[head...] { body(element) }
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        storage[head] = nil
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes every element for which `shouldRemove` is true, keeping the order of the rest.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) -> [Element] {
        var kept: [Element?] = []
        var removed: [Element] = []
        for case let element? in storage[head...] {
            if shouldRemove(element) { removed.append(element) } else { kept.append(element) }
        }
        storage = kept
        head = 0
        return removed
    }
}
