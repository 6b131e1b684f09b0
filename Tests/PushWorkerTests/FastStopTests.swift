import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// Cancelling the task that runs the service stops it fast: running jobs are cut short without a result
/// and their records stay uncommitted; finished jobs' results are delivered and committed.
@Suite(.timeLimit(.minutes(2)))
struct FastStopTests {
    static func payload(_ type: String) -> String { #"{"aps":{"content-available":1},"type":"\#(type)"}"# }

    /// Counts worker starts.
    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// `quick` answers newData at once; `long` sleeps 60 s (its budget) and counts its starts.
    static func registry(longStarts: Counter? = nil) -> WorkerRegistry {
        var registry = WorkerRegistry()
        registry.register(type: "quick", worker: ClosureWorker { _ in .newData })
        registry.register(type: "long", worker: ClosureWorker { _ in
            longStarts?.add()
            try await Task.sleep(for: .seconds(60))
            return .newData
        }, budget: .seconds(60))
        return registry
    }

    /// Waits until `condition` holds, at most `timeout`.
    static func waitFor(timeout: Duration = .seconds(20), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            if ContinuousClock.now >= deadline { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Checks what a fast stop left behind on one partition holding quick (0, 1), long (2), quick (3): the
    /// results of 0 and 1 (and of 3 if it finished before the stop) and none for 2; committed offset 2; a new
    /// member of the group reads offset 2 again (and 3 unless its result was delivered).
    static func expectLongJobLeftToTheGroup(_ harness: PushWorkerTestHarness, elapsed: Duration) async throws {
        #expect(elapsed < .seconds(10), "run() returned \(elapsed) after the cancellation, not within a few seconds")
        let delivered = harness.receivedResults
        #expect(!delivered.contains { $0.offset == 2 }, "no result for the job cut short: \(delivered.map(\.json))")
        #expect(Set(delivered.compactMap(\.offset)).isSuperset(of: [0, 1]), "finished jobs' results are delivered")
        #expect(delivered.allSatisfy { $0.result == "newData" })
        let onTopic = try await harness.readResultsTopic(count: delivered.count + 1, timeout: .seconds(2))
        #expect(onTopic.count == delivered.count, "nothing else reached the results topic")
        let committed = try await harness.committedOffsets()
        #expect(committed[0] == 2, "committed up to the job cut short, not past it: \(committed)")
        // A new member of the group reads the long job's record again (it is quick now).
        var again = WorkerRegistry()
        again.register(type: "long", worker: ClosureWorker { _ in .noData })
        again.register(type: "quick", worker: ClosureWorker { _ in .newData })
        try await harness.restart(registry: again)
        let reread = try await harness.results(count: 1, timeout: .seconds(30))
        #expect(reread.first?.offset == 2)
        #expect(reread.first?.result == "noData")
    }

    @Test func cancellingTheRunTaskCutsShortRunningJobsAndCommitsWhatFinished() async throws {
        let longStarts = Counter()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(longStarts: longStarts), partitions: 1)
        try await harness.produce(Self.payload("quick"))
        try await harness.produce(Self.payload("quick"))
        try await harness.produce(Self.payload("long"))
        _ = try await harness.results(count: 2)
        try await Self.waitFor { longStarts.value == 1 }
        let start = ContinuousClock.now
        try await harness.cancelService()
        try await Self.expectLongJobLeftToTheGroup(harness, elapsed: start.duration(to: .now))
        try await harness.shutdown()
    }

    @Test func cancellationDuringAGracefulDrainMakesItFast() async throws {
        let longStarts = Counter()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(longStarts: longStarts), partitions: 1)
        try await harness.produce(Self.payload("quick"))
        try await harness.produce(Self.payload("quick"))
        try await harness.produce(Self.payload("long"))
        _ = try await harness.results(count: 2)
        try await Self.waitFor { longStarts.value == 1 }
        let start = ContinuousClock.now
        // The graceful stop would wait up to the long job's 60 s budget for it.
        harness.service.shutdown()
        try await Task.sleep(for: .milliseconds(300))  // let the drain begin; the cancellation cuts it short either way
        try await harness.cancelService()
        try await Self.expectLongJobLeftToTheGroup(harness, elapsed: start.duration(to: .now))
        try await harness.shutdown()
    }

    @Test func aServiceCancelledBeforeItRunsReturnsAtOnceAndTakesNothing() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1)
        try await harness.stopService()
        try await harness.produce(Self.payload("quick"))
        let gate = Gate()
        let service = PushWorkerService(configuration: harness.configuration, registry: Self.registry())
        let task = Task {
            await gate.wait()
            try await service.run()
        }
        task.cancel()
        await gate.open()
        let start = ContinuousClock.now
        try await task.value
        #expect(start.duration(to: .now) < .seconds(5))
        #expect(service.currentStatistics.recordsConsumed == 0)
        let committed = try await harness.committedOffsets()
        #expect((committed[0] ?? -1001) < 0, "nothing committed: \(committed)")
        try await harness.shutdown()
    }

    @Test func aCancellationRightAfterTheStartStopsTheService() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        try await harness.stopService()
        for delay in [0, 5, 50, 300] {
            let service = PushWorkerService(configuration: harness.configuration, registry: Self.registry())
            let task = Task { try await service.run() }
            if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
            let start = ContinuousClock.now
            task.cancel()
            try await task.value
            // librdkafka before 2.3 may wait for the group's first assignment before it can close (up to 10 s,
            // more on a loaded machine). A service that missed the cancellation would run until the harness
            // stops, so 30 s separates the two without measuring the machine's load.
            #expect(start.duration(to: .now) < .seconds(30), "cancelled after \(delay) ms")
            #expect(service.httpServerPort == nil, "the HTTP server has stopped")
        }
        try await harness.shutdown()
    }
}
