import Foundation
import Synchronization
import Testing
@testable import PushWorkerCore

/// `JobDispatcher.cutShort(where:)`, the per-partition cut of a rebalance: the matching jobs (running and
/// waiting) are taken back without a result; the others keep running and deliver, and jobs still start.
@Suite struct JobDispatcherCutShortTests {
    func record(_ offset: Int64, partition: Int32, type: String, key: String? = nil) -> InputRecord {
        InputRecord(source: source(offset, partition: partition), key: key.map { Array($0.utf8) }, value: Payload.silent(type: type), receivedAtMs: WallClock.nowMs())
    }

    @Test(.timeLimit(.minutes(1)))
    func cutShortTakesOnlyTheMatchingPartitionsJobs() async throws {
        let cancelled = Atomic<Int>(0)
        let started = Atomic<Int>(0)
        let release = Atomic<Bool>(false)
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "long", worker: ClosureWorker { _ in
            started.add(1, ordering: .relaxed)
            do {
                while !release.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
            } catch {
                cancelled.add(1, ordering: .relaxed)
                throw error
            }
            return .newData
        })
        let collector = ResultCollector()
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 3, executor: BudgetedExecutor(), onResult: collector.onResult)
        // Running: partition 0 offsets 0 and 1 (1 holds key K), partition 1 offset 0. Waiting: partition 0
        // offset 2 (no slot) and partition 1 offset 1 behind key K.
        dispatcher.submit([
            record(0, partition: 0, type: "long"), record(1, partition: 0, type: "long", key: "K"),
            record(0, partition: 1, type: "long"), record(2, partition: 0, type: "long"),
            record(1, partition: 1, type: "long", key: "K"),
        ])
        #expect(await eventually(timeout: .seconds(30)) { started.load(ordering: .relaxed) == 3 })
        #expect(dispatcher.waitingCount == 2)
        let cut = dispatcher.cutShort { $0.partition == 0 }
        #expect(Set(cut.map { "\($0.partition)/\($0.offset)" }) == ["0/0", "0/1", "0/2"], "partition 0's jobs are taken: \(cut)")
        #expect(await eventually { cancelled.load(ordering: .relaxed) == 2 }, "partition 0's running tasks are cancelled")
        // Partition 1's job behind key K gets K and a freed slot: it starts.
        #expect(await eventually(timeout: .seconds(30)) { started.load(ordering: .relaxed) == 4 }, "partition 1's waiting job starts")
        release.store(true, ordering: .relaxed)
        await dispatcher.waitUntilIdle()
        #expect(Set(collector.all.map { "\($0.source.partition)/\($0.source.offset)" }) == ["1/0", "1/1"], "only partition 1 has results: \(collector.all.map(\.source))")
        // The dispatcher is not stopped: a later job runs.
        dispatcher.submit([record(3, partition: 0, type: "long")])
        await dispatcher.waitUntilIdle()
        #expect(collector.count == 3)
    }
}
