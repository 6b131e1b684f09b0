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
        // A 5 s grace instead of 1 s: a thread pool busy with parallel tests may resume the cancelled
        // sleep late, which must not read as ignoring cancellation here.
        let executor = BudgetedExecutor(cancellationGrace: .seconds(5))
        let start = ContinuousClock.now
        let report = await executor.run(makeJob(), on: RegisteredWorker(
            name: "noop", worker: NoopWorker(outcome: .newData, delay: .seconds(20)), budget: .milliseconds(200)))
        #expect(report.outcome.reason?.rawValue == "timeout")
        // Well below the 20 s delay; the report itself resumes on the cooperative pool, which parallel tests
        // under AddressSanitizer kept busy for 6 s once on 2 cores.
        #expect(elapsedMs(since: start) < 15_000, "reported at the budget, not after the 20 s delay")
        // It stopped at cancellation: it is not counted as ignoring it, even past the cancellation grace.
        try await Task.sleep(for: .seconds(5) + .milliseconds(300))
        #expect(executor.ignoredCancellationCount == 0)
        #expect(executor.timeoutCount == 1)
    }
}
