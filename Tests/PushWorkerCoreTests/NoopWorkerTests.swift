import Foundation
import Testing
@testable import PushWorkerCore

/// The built-in `noop` worker (contract section 6).
@Suite struct NoopWorkerTests {
    @Test(.timeLimit(.minutes(1)))
    func returnsItsOutcomeAtOnce() async throws {
        let outcome = WorkerOutcome(.failed, reason: "configured", detail: "from config")
        let start = ContinuousClock.now
        #expect(try await NoopWorker(outcome: outcome).perform(makeJob()) == outcome)
        #expect(elapsedMs(since: start) < 500)
        #expect(try await NoopWorker().perform(makeJob()) == .noData)
    }

    @Test(.timeLimit(.minutes(1)))
    func waitsForItsDelay() async throws {
        let start = ContinuousClock.now
        let outcome = try await NoopWorker(outcome: .newData, delay: .milliseconds(150)).perform(makeJob())
        #expect(outcome == .newData)
        #expect(elapsedMs(since: start) >= 145)
    }

    @Test(.timeLimit(.minutes(1)))
    func delayStopsAtCancellation() async {
        let start = ContinuousClock.now
        let task = Task { try await NoopWorker(outcome: .newData, delay: .seconds(40)).perform(makeJob()) }
        try? await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let result = await task.result
        let elapsed = elapsedMs(since: start)
        #expect(throws: CancellationError.self) { try result.get() }
        // Far below the 40 s delay, with room for a thread pool busy with parallel tests.
        #expect(elapsed < 10_000, "the delay ran on for \(elapsed) ms after cancellation")
    }

    @Test(.timeLimit(.minutes(1)))
    func delayedNoopTimesOutAndStopsAtItsBudget() async throws {
        // A grace far beyond the test: whether the executor counts the run as ignoring cancellation must not
        // depend on how soon a cooperative pool busy with parallel suites resumes the cancelled sleep (over
        // 5 s late in a full .ci/run). What is tested is that the worker itself returns at cancellation.
        let executor = BudgetedExecutor(cancellationGrace: .seconds(120))
        let returned = Locked<ContinuousClock.Instant?>(nil)
        let noop = NoopWorker(outcome: .newData, delay: .seconds(20))
        let worker = ClosureWorker { job in
            defer { returned.withLock { $0 = ContinuousClock.now } }
            return try await noop.perform(job)
        }
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: RegisteredWorker(name: "noop", worker: worker, budget: .milliseconds(200)))
        #expect(report.outcome.reason?.rawValue == "timeout")
        // Well below the 20 s delay; the report itself resumes on the cooperative pool, which parallel tests
        // under AddressSanitizer kept busy for 6 s once on 2 cores.
        #expect(elapsedMs(since: start) < 15_000, "reported at the budget, not after the 20 s delay")
        // It stopped at cancellation: its sleep ended long before the 20 s delay.
        #expect(await eventually(timeout: .seconds(15)) { returned.value != nil }, "the cancelled noop returned")
        #expect(returned.value.map { start.duration(to: $0) < .seconds(15) } == true)
        #expect(executor.ignoredCancellationCount == 0)
        #expect(executor.timeoutCount == 1)
    }
}
