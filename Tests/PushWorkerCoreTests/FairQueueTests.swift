import Testing
@testable import PushWorkerCore
import PushWorkerTesting

/// `FairQueue`: each lane first-in first-out, lanes in turn, so that no lane's first element waits behind
/// another lane's backlog (issue 23: a partition newly assigned to a saturated member).
@Suite struct FairQueueTests {
    @Test func oneLaneIsFirstInFirstOut() {
        var queue = FairQueue<Int, Int>()
        for n in 0..<1000 { queue.append(n, lane: 7) }
        var out: [Int] = []
        while let n = queue.popFirst() { out.append(n) }
        #expect(out == Array(0..<1000))
        #expect(queue.isEmpty && queue.count == 0)
    }

    @Test func aNewLaneWaitsOneTurnNotTheBacklog() {
        var queue = FairQueue<String, String>()
        for n in 0..<10_000 { queue.append("old-\(n)", lane: "p0") }
        _ = queue.popFirst()
        queue.append("new-0", lane: "p1")
        queue.append("new-1", lane: "p1")
        #expect(queue.popFirst() == "old-1")
        #expect(queue.popFirst() == "new-0", "the new lane's first element comes after one turn of the old lane")
        #expect(queue.popFirst() == "old-2")
        #expect(queue.popFirst() == "new-1")
        #expect(queue.popFirst() == "old-3")
        #expect(queue.count == 10_000 - 4)
    }

    @Test func removeAllKeepsOrderAndTurns() {
        var queue = FairQueue<Int, (lane: Int, n: Int)>()
        for n in 0..<6 {
            for lane in 0..<3 { queue.append((lane, n), lane: lane) }
        }
        let removed = queue.removeAll { $0.lane == 1 || $0.n % 2 == 1 }
        #expect(removed.count == 6 + 6)
        #expect(queue.count == 6)
        var out: [String] = []
        while let element = queue.popFirst() { out.append("\(element.lane).\(element.n)") }
        #expect(out == ["0.0", "2.0", "0.2", "2.2", "0.4", "2.4"])
        var counted = 0
        queue.forEach { _ in counted += 1 }
        #expect(counted == 0)
    }

    /// Seeded random appends, pops and removals against a plain model: every lane keeps its order, the
    /// count is right, and while a lane holds elements no other lane gives two before it gives one.
    @Test(arguments: [1, 2, 3, 42, 2026])
    func matchesAModel(seed: UInt64) async {
        // On a thread of its own: seconds of computing on the cooperative pool stall the other tests.
        let problems = await onOwnThread { Self.problemsAgainstAModel(seed: seed) }
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }

    /// The first problems (at most 20) of one seeded run against the model.
    static func problemsAgainstAModel(seed: UInt64) -> [String] {
        var problems: [String] = []
        func expect(_ holds: Bool, _ what: @autoclosure () -> String) {
            if !holds && problems.count < 20 { problems.append(what()) }
        }
        var random = SeededGenerator(seed: seed)
        var queue = FairQueue<Int, Int>()
        var model: [Int: [Int]] = [:]
        var next = 0
        /// The lanes that gave an element since each non-empty lane last gave one (or became non-empty).
        var since: [Int: Set<Int>] = [:]
        for step in 0..<20_000 {
            switch random.next() % 10 {
            case 0..<5:
                let lane = Int(random.next() % 8)
                if model[lane, default: []].isEmpty { since[lane] = [] }
                model[lane, default: []].append(next)
                queue.append(next, lane: lane)
                next += 1
            case 5..<9:
                let popped = queue.popFirst()
                let nonEmpty = model.filter { !$0.value.isEmpty }
                guard let popped else {
                    expect(nonEmpty.isEmpty, "seed \(seed) step \(step): empty pop with \(nonEmpty)")
                    continue
                }
                guard let lane = nonEmpty.first(where: { $0.value.first == popped })?.key else {
                    expect(false, "seed \(seed) step \(step): \(popped) was not at the front of its lane")
                    return problems
                }
                model[lane]?.removeFirst()
                for other in nonEmpty.keys where other != lane {
                    expect(since[other]?.contains(lane) != true, "seed \(seed) step \(step): lane \(lane) gave twice while lane \(other) waited")
                    since[other, default: []].insert(lane)
                }
                since[lane] = []
            default:
                let modulus = Int(random.next() % 5) + 2
                let removed = queue.removeAll { $0 % modulus == 0 }
                var expected: [Int] = []
                for lane in model.keys.sorted() {
                    expected += model[lane]?.filter { $0 % modulus == 0 } ?? []
                    model[lane]?.removeAll { $0 % modulus == 0 }
                }
                expect(removed.sorted() == expected.sorted(), "seed \(seed) step \(step)")
            }
            expect(queue.count == model.values.reduce(0) { $0 + $1.count }, "seed \(seed) step \(step): count \(queue.count)")
        }
        return problems
    }
}
