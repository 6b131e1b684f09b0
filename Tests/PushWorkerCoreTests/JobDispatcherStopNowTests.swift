import Foundation
import Synchronization
import Testing
@testable import PushWorkerCore

/// `JobDispatcher.stopNow()`, the fast stop: running jobs are cancelled and get no result, waiting ones are
/// taken back, finished ones keep their results, and nothing starts afterwards.
@Suite struct JobDispatcherStopNowTests {
    func record(_ offset: Int64, type: String, key: String? = nil) -> InputRecord {
        InputRecord(source: source(offset), key: key.map { Array($0.utf8) }, value: Payload.silent(type: type), receivedAtMs: WallClock.nowMs())
    }

    @Test(.timeLimit(.minutes(1)))
    func stopNowCancelsRunningJobsWithoutAResultAndTakesBackTheWaitingOnes() async throws {
        let cancelled = Atomic<Int>(0)
        let started = Atomic<Int>(0)
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "quick", worker: ClosureWorker { _ in .newData })
        registry.register(type: "long", worker: ClosureWorker { _ in
            started.add(1, ordering: .relaxed)
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                cancelled.add(1, ordering: .relaxed)
                throw error
            }
            return .newData
        })
        let collector = ResultCollector()
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 3, executor: BudgetedExecutor(), onResult: collector.onResult)
        // 0: quick (finishes); 1, 2, 3: long, running (three slots); 4: long, waiting behind key K of 2.
        dispatcher.submit([
            record(0, type: "quick"), record(1, type: "long"), record(2, type: "long", key: "K"),
            record(3, type: "long"), record(4, type: "long", key: "K"),
        ])
        // A generous limit: in the full suite the machine's two cores are shared with embedded clusters and
        // child processes, and the three starts can take seconds; the wait ends as soon as they happened.
        #expect(await eventually(timeout: .seconds(30)) { collector.count == 1 && started.load(ordering: .relaxed) == 3 },
                "results \(collector.count), started \(started.load(ordering: .relaxed)), running \(dispatcher.runningCount), waiting \(dispatcher.waitingCount)")
        #expect(dispatcher.waitingCount == 1)
        let taken = dispatcher.stopNow()
        #expect(Set(taken.map(\.offset)) == [1, 2, 3, 4], "the running and waiting jobs are taken back: \(taken)")
        #expect(dispatcher.runningCount == 0)
        #expect(dispatcher.waitingCount == 0)
        #expect(await eventually { cancelled.load(ordering: .relaxed) == 3 }, "the running jobs' tasks are cancelled")
        await dispatcher.waitUntilIdle()
        // A false report would follow the cancelled workers' throw at once: give it every chance to arrive.
        try await Task.sleep(for: .milliseconds(200))
        #expect(collector.all.map(\.source.offset) == [0], "only the finished job has a result: \(collector.all)")
        // Nothing starts after the stop.
        dispatcher.submit([record(5, type: "long")])
        #expect(dispatcher.runningCount == 0)
        #expect(started.load(ordering: .relaxed) == 3)
        #expect(dispatcher.discardWaiting { _ in true }.map(\.offset) == [5])
    }
}
