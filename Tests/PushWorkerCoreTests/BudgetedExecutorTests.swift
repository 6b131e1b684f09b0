import Foundation
import PushWorkerTesting
import Testing
@testable import PushWorkerCore

/// Contract section 2, rows 6–8, and the budget's start: `BudgetedExecutor`.
@Suite(.serialized) struct BudgetedExecutorTests {
    struct DiskOnFire: Error, CustomStringConvertible {
        var description: String { "disk on fire: /var/data" }
    }

    /// A registration; the default budget is far above what the quick workers here need, so that only the
    /// tests about budgets (which pass their own) depend on it, even under ThreadSanitizer on a busy machine.
    func registered(_ worker: any Worker, budget: Duration = .seconds(60)) -> RegisteredWorker {
        RegisteredWorker(name: "test-worker", worker: worker, budget: budget)
    }

    @Test(.timeLimit(.minutes(1)))
    func workerOutcomeIsReported() async {
        let executor = BudgetedExecutor()
        let outcome = WorkerOutcome(.noData, reason: "unchanged", detail: "etag matched")
        let before = WallClock.nowMs()
        let report = await executor.run(makeJob(), on: registered(ClosureWorker { _ in
            try await Task.sleep(for: .milliseconds(20))
            return outcome
        }))
        #expect(report.outcome == outcome)
        #expect(report.timedOut == false)
        #expect(report.startedAtMs >= before)
        #expect(report.finishedAtMs >= report.startedAtMs)
        // At least the worker's own 20 ms; no upper bound in wall time (a loaded machine resumes the sleep
        // late, up to 7 s once): `timedOut == false` already says it ended within its budget.
        #expect(report.durationMs >= 15)
        #expect(executor.timeoutCount == 0)
    }

    @Test(.timeLimit(.minutes(1)), arguments: [WorkerOutcome.newData, .noData, .failed("quota", detail: "HTTP 429")])
    func outcomesPassThrough(_ outcome: WorkerOutcome) async {
        let report = await BudgetedExecutor().run(makeJob(), on: registered(ClosureWorker { _ in outcome }))
        #expect(report.outcome == outcome)
        #expect(!report.timedOut)
    }

    @Test(.timeLimit(.minutes(1)))
    func workerReceivesTheJob() async {
        let seen = Locked<String?>(nil)
        _ = await BudgetedExecutor().run(makeJob(messageId: "apns-77"), on: registered(ClosureWorker { job in
            seen.withLock { $0 = "\(job.messageId) \(job.type ?? "-") \(job.object["type"]?.stringValue ?? "-")" }
            return .newData
        }))
        #expect(seen.value == "apns-77 content-update content-update")
    }

    @Test(.timeLimit(.minutes(1)))
    func throwingWorkerFailsWithWorkerError() async {
        let report = await BudgetedExecutor().run(makeJob(), on: registered(ClosureWorker { _ in throw DiskOnFire() }))
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "workerError")
        #expect(report.outcome.detail?.contains("disk on fire: /var/data") == true)
        #expect(!report.timedOut)
    }

    @Test(.timeLimit(.minutes(1)))
    func anErrorAtTheDeadlineIsATimeout() async {
        // A worker whose own I/O timeout is sized from `job.remaining` throws at its deadline, racing the
        // deadline timer: the budget ran out, so the result is `timeout` either way, never `workerError`.
        for _ in 0..<5 {
            let report = await BudgetedExecutor().run(makeJob(), on: registered(ClosureWorker { job in
                try? await Task.sleep(until: job.deadline, clock: .continuous)
                throw DiskOnFire()
            }, budget: .milliseconds(100)))
            #expect(report.outcome.reason == .timeout, "\(report.outcome.detail ?? "-")")
            #expect(report.timedOut)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func cooperatingWorkerTimesOutAtItsBudget() async {
        let executor = BudgetedExecutor()
        let budget = Duration.milliseconds(200)
        let cancelled = Locked<Bool?>(nil)
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: registered(ClosureWorker { _ in
            do {
                try await Task.sleep(for: .seconds(10))
            } catch {
                cancelled.withLock { $0 = error is CancellationError }
                throw error
            }
            return .newData
        }, budget: budget))
        let elapsed = elapsedMs(since: start)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "timeout")
        #expect(report.outcome.detail?.isEmpty == false)
        #expect(report.timedOut)
        #expect(report.durationMs == 200)
        #expect(elapsed >= 195, "reported after \(elapsed) ms, before the budget")
        #expect(elapsed < 1200, "reported after \(elapsed) ms")
        #expect(report.finishedAtMs - report.startedAtMs >= 190)
        #expect(executor.timeoutCount == 1)
        // The worker's sleep was cancelled.
        #expect(await eventually { cancelled.value == true })
        // A worker that stopped at cancellation is not counted as ignoring it.
        try? await Task.sleep(for: .milliseconds(300))
        #expect(executor.ignoredCancellationCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func workerIgnoringCancellationStillTimesOutAtTheDeadline() async {
        let executor = BudgetedExecutor()
        // A 1 s budget: the worker's task must start before its deadline, and on a loaded 2-core machine a
        // new task waited more than 200 ms for a pool thread (the CI run of 3256f85: already cancelled when it
        // started). The worker sleeps past the deadline and the 1 s grace, so it is counted as ignoring
        // cancellation before it returns.
        let budget = Duration.seconds(1)
        let cancelledAtStart = Locked<Bool?>(nil)
        let cancelledAfterDeadline = Locked<Bool?>(nil)
        let workerDone = Locked<ContinuousClock.Instant?>(nil)
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: registered(ClosureWorker { _ in
            cancelledAtStart.withLock { $0 = Task.isCancelled }
            await nonCancellableSleep(.milliseconds(3500))
            cancelledAfterDeadline.withLock { $0 = Task.isCancelled }
            workerDone.withLock { $0 = .now }
            return .newData
        }, budget: budget))
        let completedAfter = elapsedMs(since: start)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason?.rawValue == "timeout")
        #expect(report.timedOut)
        #expect(completedAfter >= 995)
        #expect(completedAfter < 2500, "the timeout was reported after \(completedAfter) ms, not at the 1 s deadline")
        #expect(workerDone.value == nil, "the completion waited for the worker")
        #expect(executor.timeoutCount == 1)

        // Still running a moment after its deadline, it is counted as ignoring cancellation, before it returns.
        #expect(await eventually(timeout: .seconds(6)) { executor.ignoredCancellationCount == 1 })
        #expect(workerDone.value == nil, "counted while the worker is still running")
        // Once it finally returns, it is not counted a second time.
        #expect(await eventually(timeout: .seconds(6)) { workerDone.value != nil })
        try? await Task.sleep(for: .milliseconds(200))
        #expect(executor.ignoredCancellationCount == 1)
        #expect(cancelledAtStart.value == false)
        #expect(cancelledAfterDeadline.value == true)
    }

    @Test(.timeLimit(.minutes(1)))
    func aWorkerThatNeverReturnsIsCountedAndTheObserverToldPerType() async {
        let events = Locked<[BudgetEvent]>([])
        let executor = BudgetedExecutor(observer: { event in events.withLock { $0.append(event) } })
        let never = Gate()
        let report = await executor.run(makeJob(type: "stuck"), on: RegisteredWorker(name: "swift:stuck", worker: ClosureWorker { _ in
            await never.wait()  // never opened, deaf to cancellation
            return .newData
        }, budget: .milliseconds(100)))
        #expect(report.outcome.reason?.rawValue == "timeout")
        #expect(await eventually(timeout: .seconds(6)) { executor.ignoredCancellationCount == 1 })
        // The counter is raised just before the observer is called (on another task): wait for the event too.
        #expect(await eventually(timeout: .seconds(6)) { events.value.count == 2 })
        #expect(events.value == [.timedOut(type: "stuck", worker: "swift:stuck"), .ignoredCancellation(type: "stuck", worker: "swift:stuck")])
        // A worker that stops at cancellation is reported as a timeout only.
        _ = await executor.run(makeJob(type: nil), on: RegisteredWorker(name: "polite", worker: ClosureWorker { _ in
            try await Task.sleep(for: .seconds(10))
            return .newData
        }, budget: .milliseconds(100)))
        try? await Task.sleep(for: .milliseconds(400))
        #expect(events.value.count == 3)
        #expect(events.value.last == .timedOut(type: nil, worker: "polite"))
        #expect(executor.ignoredCancellationCount == 1)
        await never.open()
    }

    @Test(.timeLimit(.minutes(1)))
    func theDeadlineThreadReportsItsHeartbeat() async {
        let executor = BudgetedExecutor()
        #expect(await eventually { (executor.sinceDeadlineTimerRound ?? .seconds(99)) < .seconds(2) })
        try? await Task.sleep(for: .milliseconds(700))
        #expect((executor.sinceDeadlineTimerRound ?? .seconds(99)) < .seconds(2), "the idle thread looks again at least every 500 ms")
    }

    @Test(.timeLimit(.minutes(1)))
    func busyWorkerIgnoringCancellationStillTimesOut() async {
        let executor = BudgetedExecutor()
        let spins = Locked<Int>(0)
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: registered(ClosureWorker { _ in
            // A busy loop that never checks for cancellation (it yields so it does not starve the pool).
            let until = ContinuousClock.now.advanced(by: .milliseconds(2000))
            while ContinuousClock.now < until {
                spins.withLock { $0 += 1 }
                await Task.yield()
            }
            return .newData
        }, budget: .milliseconds(150)))
        let elapsed = elapsedMs(since: start)
        #expect(report.outcome.reason?.rawValue == "timeout")
        #expect(elapsed < 1500, "reported after \(elapsed) ms")
        #expect(await eventually(timeout: .seconds(6)) { executor.ignoredCancellationCount == 1 })
    }

    @Test(.timeLimit(.minutes(1)))
    func completionIsCalledExactlyOnce() async {
        let executor = BudgetedExecutor()
        let calls = Locked<[ExecutionReport]>([])
        // Times out, then the worker returns late: still one completion.
        executor.run(makeJob(), on: registered(ClosureWorker { _ in
            await nonCancellableSleep(.milliseconds(1500))
            return .newData
        }, budget: .milliseconds(100))) { report in calls.withLock { $0.append(report) } }
        // Returns well within its budget: one completion, and the deadline later does not fire a second.
        // 3 s, not milliseconds: a loaded machine may start the worker late, and a worker that had not run by
        // its deadline would time out (a first completion that is right, not the second one tested here).
        let secondBudget = Duration.seconds(3)
        let secondStart = ContinuousClock.now
        executor.run(makeJob(), on: registered(ClosureWorker { _ in .noData }, budget: secondBudget)) { report in
            calls.withLock { $0.append(report) }
        }
        #expect(await eventually(timeout: .seconds(6)) { executor.ignoredCancellationCount == 1 })
        // Past the second job's deadline, so that a second completion from it would be here.
        try? await Task.sleep(until: secondStart.advanced(by: secondBudget + .milliseconds(300)), clock: .continuous)
        let reports = calls.value
        #expect(reports.count == 2)
        #expect(reports.filter { $0.outcome.reason?.rawValue == "timeout" }.count == 1)
        #expect(reports.filter { $0.outcome == .noData }.count == 1)
        #expect(executor.timeoutCount == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func budgetCountsFromTheStartOfTheRunNotFromJobCreation() async throws {
        let executor = BudgetedExecutor()
        // A worker that returns at once and a budget of 10 s: only a stall of the whole test process for
        // 10 s could run it past its deadline (CI, with a 2 s budget and a 100 ms sleep, once had one of 3 s).
        let budgetMs: Int64 = 10_000
        let createdAtMs = WallClock.nowMs()
        // The job is built with a deadline that passes while it waits to be run.
        let job = makeJob(deadline: .now.advanced(by: .milliseconds(300)))
        try? await Task.sleep(for: .milliseconds(450))
        let seen = Locked<(remainingMs: Double, deadlineMs: Int64, wallMs: Int64)?>(nil)
        let report = await executor.run(job, on: registered(ClosureWorker { job in
            seen.withLock { $0 = (milliseconds(job.remaining), job.deadlineMs, WallClock.nowMs()) }
            return .newData
        }, budget: .milliseconds(budgetMs)))
        #expect(report.outcome == .newData, "the budget was consumed while the job waited")
        #expect(!report.timedOut)
        let (remainingMs, deadlineMs, wallMs) = try #require(seen.value)
        // Counted from the job's creation, nothing would remain: its deadline had passed.
        #expect(remainingMs > 0 && remainingMs <= Double(budgetMs), "remaining \(remainingMs) ms at the start of the run")
        // The deadline is the run's start plus the budget, after the job's creation plus its wait plus the budget.
        #expect(abs(deadlineMs - (report.startedAtMs + budgetMs)) <= 100, "deadlineMs \(deadlineMs), started \(report.startedAtMs)")
        #expect(deadlineMs > wallMs)
        #expect(deadlineMs >= createdAtMs + 400 + budgetMs, "a 450 ms wait, read on two clocks")
    }

    @Test(.timeLimit(.minutes(1)))
    func deadlineMsMatchesTheTimeoutMoment() async throws {
        let executor = BudgetedExecutor()
        let deadlineMs = Locked<Int64?>(nil)
        let report = await executor.run(makeJob(), on: registered(ClosureWorker { job in
            deadlineMs.withLock { $0 = job.deadlineMs }
            try await Task.sleep(for: .seconds(10))
            return .newData
        }, budget: .milliseconds(250)))
        #expect(report.outcome.reason?.rawValue == "timeout")
        let deadline = try #require(deadlineMs.value)
        #expect(report.finishedAtMs >= deadline - 20)
        #expect(report.finishedAtMs < deadline + 500)
    }

    @Test(.timeLimit(.minutes(1)))
    func manyConcurrentRunsWithDifferentBudgets() async {
        let executor = BudgetedExecutor()
        let reports = Locked<[String: ExecutionReport]>([:])
        let sleepForever = ClosureWorker { _ in try await Task.sleep(for: .seconds(10)); return .newData }
        let quick = ClosureWorker { _ in try await Task.sleep(for: .milliseconds(50)); return .newData }
        let start = ContinuousClock.now
        for (name, worker, budget) in [
            ("long-budget-timeout", sleepForever as any Worker, Duration.milliseconds(400)),
            ("short-budget-timeout", sleepForever, .milliseconds(150)),
            ("quick-in-long-budget", quick, .seconds(5)),
        ] {
            executor.run(makeJob(messageId: name), on: registered(worker, budget: budget)) { report in
                let at = elapsedMs(since: start)
                reports.withLock { $0[name] = report; $0[name]?.durationMs = at }
            }
        }
        #expect(await eventually { reports.value.count == 3 })
        let all = reports.value
        #expect(all["quick-in-long-budget"]?.outcome == .newData)
        #expect(all["short-budget-timeout"]?.outcome.reason?.rawValue == "timeout")
        #expect(all["long-budget-timeout"]?.outcome.reason?.rawValue == "timeout")
        // durationMs holds the moment of the completion here.
        let short = all["short-budget-timeout"]?.durationMs ?? 0
        let long = all["long-budget-timeout"]?.durationMs ?? 0
        #expect(short >= 145 && short < 650, "short budget reported at \(short) ms")
        #expect(long >= 395 && long < 900, "long budget reported at \(long) ms")
    }
}
