import Foundation
import Synchronization
import Testing
@testable import PushWorkerCore

/// A worker's `maxConcurrent` bounds its own jobs without holding back other workers.
@Suite struct WorkerConcurrencyLimitTests {
    final class Gauge: Sendable {
        private let state = Mutex<(running: [String: Int], peak: [String: Int], overlapOfBWhileAFull: Bool)>(([:], [:], false))
        func enter(_ name: String) {
            state.withLock { state in
                state.running[name, default: 0] += 1
                state.peak[name] = max(state.peak[name] ?? 0, state.running[name] ?? 0)
                if name == "b", state.running["a", default: 0] == 1 { state.overlapOfBWhileAFull = true }
            }
        }
        func leave(_ name: String) { state.withLock { $0.running[name, default: 0] -= 1 } }
        var peak: [String: Int] { state.withLock { $0.peak } }
        var bRanWhileAWasFull: Bool { state.withLock { $0.overlapOfBWhileAFull } }
    }

    struct Sleeper: Worker {
        let name: String
        let gauge: Gauge
        func perform(_ job: Job) async throws -> WorkerOutcome {
            gauge.enter(name)
            try? await Task.sleep(for: .milliseconds(60))
            gauge.leave(name)
            return .newData
        }
    }

    @Test(.timeLimit(.minutes(1))) func aSaturatedWorkerDoesNotHoldBackOthers() async {
        let gauge = Gauge()
        var registry = WorkerRegistry(defaultBudget: .seconds(10))
        registry.register(type: "a", worker: Sleeper(name: "a", gauge: gauge), name: "a", maxConcurrent: 1)
        registry.register(type: "b", worker: Sleeper(name: "b", gauge: gauge), name: "b")
        let results = Mutex<[ResultRecord]>([])
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor()) { result, _ in
            results.withLock { $0.append(result) }
        }
        // Six a's first, then six b's, no keys: the a's beyond the first must not block the b's.
        let records = (0..<12).map { index in
            InputRecord(
                source: RecordSource(topic: "t", partition: 0, offset: Int64(index)),
                value: Array(#"{"aps":{"content-available":1},"type":"\#(index < 6 ? "a" : "b")"}"#.utf8),
                receivedAtMs: WallClock.nowMs())
        }
        dispatcher.submit(records)
        await dispatcher.waitUntilIdle()
        #expect(results.withLock { $0.count } == 12)
        #expect(results.withLock { $0 }.allSatisfy { $0.result == .newData })
        #expect(gauge.peak["a"] == 1, "never more than maxConcurrent a's at once")
        #expect((gauge.peak["b"] ?? 0) >= 2, "b's ran in parallel")
        #expect(gauge.bRanWhileAWasFull, "b's ran while a was at its limit")
    }

    @Test(.timeLimit(.minutes(1))) func discardingABlockedJobFreesItsKey() async {
        let gauge = Gauge()
        var registry = WorkerRegistry(defaultBudget: .seconds(10))
        registry.register(type: "a", worker: Sleeper(name: "a", gauge: gauge), name: "a", maxConcurrent: 1)
        let results = Mutex<[Int64]>([])
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor()) { result, _ in
            results.withLock { $0.append(result.source.offset) }
        }
        func record(_ offset: Int64, partition: Int32, key: String) -> InputRecord {
            InputRecord(source: RecordSource(topic: "t", partition: partition, offset: offset), key: Array(key.utf8),
                        value: Array(#"{"aps":{"content-available":1},"type":"a"}"#.utf8), receivedAtMs: WallClock.nowMs())
        }
        // Offset 0 runs; offset 1 (key K) is blocked by the limit; offset 2 waits behind it for key K.
        dispatcher.submit([record(0, partition: 0, key: "J"), record(1, partition: 1, key: "K"), record(2, partition: 0, key: "K")])
        #expect(dispatcher.discardWaiting { $0.partition == 1 }.map(\.offset) == [1])
        await dispatcher.waitUntilIdle()
        #expect(results.withLock { $0 }.sorted() == [0, 2])
    }
}
