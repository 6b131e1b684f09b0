import Foundation
import Testing
@testable import PushWorkerCore

/// Scheduling in `JobDispatcher`: same-key ordering, the in-flight bound, budgets that start at the worker's
/// start, `discardWaiting` and `waitUntilIdle`.
@Suite(.serialized) struct JobDispatcherTests {
    /// Records when each job (by offset) ran and how many ran at once.
    final class RunLog: Sendable {
        struct Run: Sendable {
            var offset: Int64
            var key: String?
            var start: ContinuousClock.Instant
            var end: ContinuousClock.Instant?
        }
        private let state = Locked<(runs: [Run], running: Int, maxRunning: Int)>(([], 0, 0))

        var runs: [Run] { state.value.runs }
        var maxRunning: Int { state.value.maxRunning }
        var started: [Int64] { runs.map(\.offset) }

        /// A worker that logs its run and sleeps `duration` (cancellable); the run of offset `held` lasts instead
        /// until every offset of `others` has started (at most 10 s), so that they overlap it on any machine.
        func worker(sleeping duration: Duration, outcome: WorkerOutcome = .newData, holding held: Int64? = nil, until others: Set<Int64> = []) -> ClosureWorker {
            ClosureWorker { [self] job in
                let key = job.key.map { String(decoding: $0, as: UTF8.self) }
                state.withLock { state in
                    state.runs.append(Run(offset: job.source.offset, key: key, start: .now))
                    state.running += 1
                    state.maxRunning = max(state.maxRunning, state.running)
                }
                defer {
                    state.withLock { state in
                        state.running -= 1
                        if let index = state.runs.firstIndex(where: { $0.offset == job.source.offset }) { state.runs[index].end = .now }
                    }
                }
                if job.source.offset == held {
                    let deadline = ContinuousClock.now.advanced(by: .seconds(10))
                    while !others.isSubset(of: Set(started)), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                } else {
                    try await Task.sleep(for: duration)
                }
                return outcome
            }
        }

        func run(_ offset: Int64) -> Run? { runs.first { $0.offset == offset } }
    }

    func record(_ offset: Int64, key: String? = nil, type: String = "work", partition: Int32 = 0) -> InputRecord {
        InputRecord(source: source(offset, partition: partition), key: key.map { Array($0.utf8) }, value: Payload.silent(type: type), receivedAtMs: WallClock.nowMs())
    }

    func dispatcher(_ log: RunLog, sleeping: Duration, maxInFlight: Int, collector: ResultCollector, budget: Duration = .seconds(10),
                    holding held: Int64? = nil, until others: Set<Int64> = []) -> JobDispatcher {
        var registry = WorkerRegistry(defaultBudget: budget)
        registry.register(type: "work", worker: log.worker(sleeping: sleeping, holding: held, until: others))
        return JobDispatcher(registry: registry, maxInFlight: maxInFlight, executor: BudgetedExecutor(), onResult: collector.onResult)
    }

    func overlap(_ a: RunLog.Run, _ b: RunLog.Run) -> Bool {
        guard let aEnd = a.end, let bEnd = b.end else { return false }
        return a.start < bEnd && b.start < aEnd
    }

    @Test(.timeLimit(.minutes(1)))
    func sameKeyRunsOneAfterAnotherInSubmitOrder() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(200), maxInFlight: 4, collector: collector)
        // Interleaved keys A and B, submitted in one batch: A at offsets 0, 2, 4; B at 1, 3, 5.
        dispatcher.submit((0..<6).map { record(Int64($0), key: $0 % 2 == 0 ? "A" : "B") })
        #expect(dispatcher.runningCount == 2)
        #expect(dispatcher.waitingCount == 4)
        #expect(await idle(dispatcher))
        #expect(collector.count == 6)
        for key in ["A", "B"] {
            let runs = log.runs.filter { $0.key == key }.sorted { $0.start < $1.start }
            #expect(runs.map(\.offset) == (key == "A" ? [0, 2, 4] : [1, 3, 5]), "key \(key) ran out of submit order")
            for (earlier, later) in zip(runs, runs.dropFirst()) {
                let end = try #require(earlier.end)
                #expect(end <= later.start, "offset \(later.offset) started before offset \(earlier.offset) of the same key ended")
            }
        }
        // Different keys ran in parallel.
        let a0 = try #require(log.run(0)), b1 = try #require(log.run(1))
        #expect(overlap(a0, b1), "records with different keys did not overlap")
        #expect(log.maxRunning == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func sameKeyAcrossSeparateSubmits() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        // Offset 0 runs until 2 and 3 have started (or 10 s): a fixed 250 ms run ended before a loaded
        // machine's second submit came, and 2 and 3 could not overlap it.
        let dispatcher = dispatcher(log, sleeping: .milliseconds(50), maxInFlight: 4, collector: collector, holding: 0, until: [2, 3])
        dispatcher.submit([record(0, key: "device-1")])
        #expect(await eventually(timeout: .seconds(30)) { log.started == [0] })
        dispatcher.submit([record(1, key: "device-1"), record(2, key: "device-2"), record(3)])
        #expect(dispatcher.waitingCount == 1)
        #expect(await idle(dispatcher))
        let first = try #require(log.run(0)), second = try #require(log.run(1))
        #expect(try #require(first.end) <= second.start)
        // The other key and the keyless record did not wait for device-1.
        let other = try #require(log.run(2)), keyless = try #require(log.run(3))
        #expect(overlap(first, other))
        #expect(overlap(first, keyless))
    }

    @Test(.timeLimit(.minutes(1)))
    func sameKeyOrderHoldsForWorkersThatAnswerAtOnce() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        var registry = WorkerRegistry()
        registry.register(type: "work", worker: log.worker(sleeping: .milliseconds(150)))
        // A noop worker without delay can answer without suspending; it must still wait for its key.
        registry.register(type: "instant", worker: NoopWorker(outcome: WorkerOutcome(.noData, reason: "instant")))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([record(0, key: "K"), record(1, key: "K", type: "instant"), record(2, key: "J", type: "instant"), record(3, type: "instant")])
        #expect(await idle(dispatcher))
        let order = collector.all.map(\.source.offset)
        #expect(Set(order) == [0, 1, 2, 3])
        let first = try #require(order.firstIndex(of: 0)), second = try #require(order.firstIndex(of: 1))
        #expect(first < second, "the second record of key K finished before the first: \(order)")
        let slow = try #require(collector.result(offset: 0)), instant = try #require(collector.result(offset: 1))
        #expect(try #require(instant.startedAtMs) >= slow.finishedAtMs)
        #expect(instant.reason?.rawValue == "instant")
        #expect(instant.worker == "instant")
    }

    @Test(.timeLimit(.minutes(1)))
    func recordsWithoutKeyRunInParallel() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(250), maxInFlight: 3, collector: collector)
        dispatcher.submit([record(0), record(1), record(2)])
        #expect(dispatcher.runningCount == 3)
        #expect(await idle(dispatcher))
        #expect(log.maxRunning == 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func maxInFlightIsRespected() async {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(100), maxInFlight: 3, collector: collector)
        dispatcher.submit((0..<12).map { record(Int64($0), key: $0 % 4 == 0 ? nil : "key-\($0)") })
        #expect(dispatcher.runningCount == 3)
        #expect(dispatcher.waitingCount == 9)
        #expect(await idle(dispatcher))
        #expect(collector.count == 12)
        #expect(log.maxRunning == 3)
        #expect(log.runs.count == 12)
        // Records started in submit order (no keys are shared).
        #expect(log.runs.sorted { $0.start < $1.start }.map(\.offset).prefix(3).sorted() == [0, 1, 2])
    }

    @Test(.timeLimit(.minutes(1)))
    func maxInFlightOfOneRunsEverythingSerially() async {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(30), maxInFlight: 0, collector: collector) // clamped to 1
        dispatcher.submit((0..<5).map { record(Int64($0)) })
        #expect(await idle(dispatcher))
        #expect(log.maxRunning == 1)
        #expect(log.started == [0, 1, 2, 3, 4])
    }

    @Test(.timeLimit(.minutes(1)))
    func waitingRecordsBudgetStartsWhenItsWorkerStarts() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        var registry = WorkerRegistry()
        // Margins for a loaded machine or a sanitizer's slowdown: the quick job needs 50 ms of its 2 s, and
        // the slow one, which holds the only slot for 2.5 s, has 60 s.
        registry.register(type: "slow", worker: log.worker(sleeping: .milliseconds(2500)), budget: .seconds(60))
        registry.register(type: "quick", worker: log.worker(sleeping: .milliseconds(50)), budget: .seconds(2))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 1, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([record(0, type: "slow"), record(1, type: "quick")])
        #expect(dispatcher.waitingCount == 1)
        #expect(await idle(dispatcher))
        let slow = try #require(collector.result(offset: 0))
        let quick = try #require(collector.result(offset: 1))
        #expect(slow.result == .newData)
        // The quick record waited ~2.5 s, longer than its 2 s budget, but the budget starts at its worker's start.
        #expect(quick.result == .newData, "the waiting record timed out: \(quick.reason?.rawValue ?? "") \(quick.detail ?? "")")
        #expect(quick.reason == nil)
        let quickStarted = try #require(quick.startedAtMs)
        #expect(quickStarted >= slow.finishedAtMs - 5)
        #expect(quickStarted - quick.receivedAtMs >= 2400)
        #expect(quick.durationMs >= 45 && quick.durationMs < 2000)
    }

    @Test(.timeLimit(.minutes(1)))
    func waitingBehindItsKeyDoesNotUseTheBudget() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        var registry = WorkerRegistry()
        // The first record of the key holds it for 2.5 s (its own budget is 60 s); the five behind it wait
        // that long, longer than their 2 s budget, and then need 10 ms of it each (room for a loaded machine
        // or a sanitizer's slowdown).
        registry.register(type: "slow", worker: log.worker(sleeping: .milliseconds(2500)), budget: .seconds(60))
        registry.register(type: "quick", worker: log.worker(sleeping: .milliseconds(10)), budget: .seconds(2))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
        dispatcher.submit([record(0, key: "same", type: "slow")] + (1..<6).map { record(Int64($0), key: "same", type: "quick") })
        #expect(await idle(dispatcher))
        #expect(collector.all.count == 6)
        #expect(collector.all.allSatisfy { $0.result == .newData }, "\(collector.all.map { $0.reason?.rawValue ?? "-" })")
        let last = try #require(collector.result(offset: 5))
        #expect(try #require(last.startedAtMs) - last.receivedAtMs >= 2400, "the last record waited behind its key longer than its budget")
    }

    @Test(.timeLimit(.minutes(1)))
    func discardWaitingTakesBackOnlyWaitingRecords() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(200), maxInFlight: 1, collector: collector)
        dispatcher.submit([
            record(0, partition: 0),
            record(1, partition: 1),
            record(2, key: "k", partition: 1),
            record(3, partition: 0),
            record(4, key: "k", partition: 1),
            record(5, key: "k2", partition: 1),
            record(6, key: "k2", partition: 1),
        ])
        #expect(dispatcher.runningCount == 1)
        #expect(dispatcher.waitingCount == 6)
        let removed = dispatcher.discardWaiting { $0.partition == 1 }
        #expect(Set(removed) == Set([1, 2, 4, 5, 6].map { source(Int64($0), partition: 1) }))
        #expect(removed.count == 5)
        #expect(dispatcher.waitingCount == 1)
        #expect(dispatcher.runningCount == 1, "the running record was not affected")
        #expect(await idle(dispatcher))
        // Give discarded records every chance to show up.
        try await Task.sleep(for: .milliseconds(250))
        #expect(collector.all.map(\.source.offset).sorted() == [0, 3])
        #expect(log.started.sorted() == [0, 3])
        #expect(dispatcher.discardWaiting { _ in true }.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func discardWaitingLeavesTheRestInOrder() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(40), maxInFlight: 1, collector: collector)
        dispatcher.submit((0..<8).map { record(Int64($0), key: "same", partition: $0 % 2 == 0 ? 0 : 1) })
        let removed = dispatcher.discardWaiting { $0.partition == 1 }
        #expect(Set(removed.map(\.offset)) == [1, 3, 5, 7])
        #expect(await idle(dispatcher))
        #expect(log.started == [0, 2, 4, 6])
        #expect(collector.all.map(\.source.offset) == [0, 2, 4, 6])
    }

    @Test(.timeLimit(.minutes(1)))
    func discardWaitingWakesIdleWaiters() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(100), maxInFlight: 1, collector: collector)
        dispatcher.submit([record(0), record(1)])
        let isIdle = Locked<Bool>(false)
        Task {
            await dispatcher.waitUntilIdle()
            isIdle.withLock { $0 = true }
        }
        #expect(dispatcher.discardWaiting { $0.offset == 1 }.map(\.offset) == [1])
        #expect(await eventually(timeout: .seconds(5)) { isIdle.value })
        #expect(collector.all.map(\.source.offset) == [0])
    }

    @Test(.timeLimit(.minutes(1)))
    func discardingAWaitingRecordFreesItsKey() async {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(150), maxInFlight: 1, collector: collector)
        // Offset 1 (key K) waits for the slot held by offset 0, then is taken back (its partition is revoked).
        dispatcher.submit([record(0, partition: 0), record(1, key: "K", partition: 1)])
        #expect(dispatcher.discardWaiting { $0.partition == 1 }.map(\.offset) == [1])
        // Later, another record with key K arrives (e.g. the partition came back).
        dispatcher.submit([record(2, key: "K", partition: 0)])
        #expect(await eventually(timeout: .seconds(3)) { collector.result(offset: 2) != nil }, "a later record with the discarded record's key never ran")
        #expect(await idle(dispatcher))
        #expect(collector.all.map(\.source.offset).sorted() == [0, 2])
    }

    @Test(.timeLimit(.minutes(1)))
    func discardingAWaitingKeyHolderHandsTheKeyOn() async throws {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(150), maxInFlight: 1, collector: collector)
        // Offset 1 (key K, partition 1) waits for the slot; offsets 2 and 3 (key K, partition 0) queue behind it.
        dispatcher.submit([record(0), record(1, key: "K", partition: 1), record(2, key: "K"), record(3, key: "K")])
        #expect(dispatcher.waitingCount == 3)
        #expect(dispatcher.discardWaiting { $0.partition == 1 }.map(\.offset) == [1])
        #expect(dispatcher.waitingCount == 2)
        #expect(await idle(dispatcher), "records queued behind a discarded record never ran")
        #expect(collector.all.map(\.source.offset) == [0, 2, 3])
        // Still one after another.
        let two = try #require(log.run(2)), three = try #require(log.run(3))
        #expect(try #require(two.end) <= three.start)
    }

    @Test(.timeLimit(.minutes(1)))
    func discardStartsWaitingRecordsWhenSlotsAreFree() async {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(100), maxInFlight: 2, collector: collector)
        dispatcher.submit([record(0, key: "K"), record(1, key: "K"), record(2, key: "K")])
        #expect(dispatcher.runningCount == 1)
        #expect(dispatcher.discardWaiting { $0.offset == 1 }.map(\.offset) == [1])
        #expect(await idle(dispatcher))
        #expect(log.started == [0, 2])
    }

    @Test(.timeLimit(.minutes(1)))
    func waitUntilIdleReturnsAfterAllFinish() async {
        let log = RunLog()
        let collector = ResultCollector()
        let dispatcher = dispatcher(log, sleeping: .milliseconds(80), maxInFlight: 2, collector: collector)
        dispatcher.submit((0..<6).map { record(Int64($0), key: $0 < 3 ? "a" : nil) })
        let start = ContinuousClock.now
        // Three waiters; each notes what it saw when waitUntilIdle returned.
        let seen = Locked<[(results: Int, unfinished: Int, running: Int, waiting: Int, afterMs: Double)]>([])
        for _ in 0..<3 {
            Task {
                await dispatcher.waitUntilIdle()
                let snapshot = (collector.count, log.runs.filter { $0.end == nil }.count, dispatcher.runningCount, dispatcher.waitingCount, elapsedMs(since: start))
                seen.withLock { $0.append(snapshot) }
            }
        }
        #expect(await eventually(timeout: .seconds(10)) { seen.value.count == 3 })
        for snapshot in seen.value {
            #expect(snapshot.results == 6)
            #expect(snapshot.unfinished == 0)
            #expect(snapshot.running == 0 && snapshot.waiting == 0)
            #expect(snapshot.afterMs >= 150) // 6 jobs of 80 ms on 2 slots: at least 240 ms
        }
    }

    /// A job's slot is freed before its result is handed over: a job that finishes later must not let
    /// waitUntilIdle return while an earlier one's result is still on its way (the CI run of 467620b under
    /// AddressSanitizer: JobDispatcherCutShortTests read one result of two after waitUntilIdle).
    @Test(.timeLimit(.minutes(1)))
    func waitUntilIdleWaitsForAResultStillBeingHandedOver() async {
        let handing = Locked(false)
        let release = DispatchSemaphore(value: 0)
        let delivered = Locked<[Int64]>([])
        var registry = WorkerRegistry(defaultBudget: .seconds(10))
        registry.register(type: "work", worker: ClosureWorker { job in
            if job.source.offset == 1 { try await Task.sleep(for: .milliseconds(50)) }
            return .newData
        })
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 2, executor: BudgetedExecutor()) { result, _ in
            if result.source.offset == 0 {
                // The thread that finished offset 0 stops before handing its result over.
                handing.withLock { $0 = true }
                release.wait()
            }
            delivered.withLock { $0.append(result.source.offset) }
        }
        let seenAtIdle = Locked<[Int64]?>(nil)
        let heldBack = Locked<Bool?>(nil)
        // Offset 0's result is let go from a thread of its own (not the pool): once offset 1 has finished and
        // been handed over, and a moment longer, in which a dispatcher that looked idle would have said so.
        onDedicatedThread {
            let reached = spinUntil { handing.value && delivered.value == [1] }
            if reached { _ = spinUntil(timeout: .milliseconds(300)) { seenAtIdle.value != nil } }
            heldBack.withLock { $0 = reached }
            release.signal()
        }
        dispatcher.submit([record(0), record(1)])
        await dispatcher.waitUntilIdle()
        seenAtIdle.withLock { $0 = delivered.value }
        #expect(await eventually(timeout: .seconds(30)) { heldBack.value != nil })
        #expect(heldBack.value == true, "offset 1 finished and was handed over while offset 0's result was held back")
        // Idle only once offset 0's result was handed over too (without the hand-over count: [1]).
        #expect(seenAtIdle.value == [1, 0])
    }

    @Test(.timeLimit(.minutes(1)))
    func waitUntilIdleReturnsAtOnceWhenIdle() async {
        let collector = ResultCollector()
        let dispatcher = dispatcher(RunLog(), sleeping: .zero, maxInFlight: 1, collector: collector)
        let start = ContinuousClock.now
        #expect(await idle(dispatcher))
        // Only rejected records: idle again at once.
        dispatcher.submit([InputRecord(source: source(0), value: nil, receivedAtMs: WallClock.nowMs())])
        #expect(await idle(dispatcher))
        #expect(collector.count == 1)
        #expect(elapsedMs(since: start) < 1000)
    }

    @Test(.timeLimit(.minutes(1)))
    func timedOutRecordFreesItsSlotAndKeyAtTheDeadline() async throws {
        let collector = ResultCollector()
        let started = Locked<[Int64: ContinuousClock.Instant]>([:])
        var registry = WorkerRegistry()
        registry.register(type: "stuck", worker: ClosureWorker { job in
            started.withLock { $0[job.source.offset] = .now }
            await nonCancellableSleep(.milliseconds(2500))
            return .newData
        }, budget: .milliseconds(150))
        registry.register(type: "work", worker: ClosureWorker { job in
            started.withLock { $0[job.source.offset] = .now }
            return .newData
        })
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 1, executor: BudgetedExecutor(), onResult: collector.onResult)
        let start = ContinuousClock.now
        dispatcher.submit([record(0, key: "k", type: "stuck"), record(1, key: "k")])
        #expect(await idle(dispatcher))
        let idleAfter = elapsedMs(since: start)
        #expect(collector.result(offset: 0)?.reason?.rawValue == "timeout")
        #expect(collector.result(offset: 1)?.result == .newData)
        // The next record of the key started at the deadline, not when the stuck worker finally returned.
        #expect(idleAfter < 1500, "idle after \(idleAfter) ms")
    }
}
