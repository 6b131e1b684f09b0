import Foundation
import Testing
@testable import PushWorkerCore
import PushWorkerTesting

/// ``JobDispatcher/loadByType()``: what the status page shows as jobs running and waiting by type.
@Suite struct JobDispatcherLoadTests {
    struct Held: Worker {
        let hold: Gate
        func perform(_ job: Job) async throws -> WorkerOutcome {
            await hold.wait()
            return .newData
        }
    }

    @Test(.timeLimit(.minutes(1))) func runningAndWaitingJobsAreCountedByType() async throws {
        let hold = Gate()
        var registry = WorkerRegistry(defaultBudget: .seconds(30))
        registry.register(type: "a", worker: Held(hold: hold))
        registry.register(type: "b", worker: Held(hold: hold))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 2, executor: BudgetedExecutor()) { _, _ in }
        #expect(dispatcher.loadByType().isEmpty)
        // Two slots: a and b run; the next a waits for a slot, the b keyed like the running b waits for its key.
        let values = [("a", nil), ("b", "k"), ("a", nil), ("b", "k")] as [(String, String?)]
        dispatcher.submit(values.enumerated().map { index, value in
            InputRecord(source: RecordSource(topic: "t", partition: 0, offset: Int64(index)), key: value.1.map { Array($0.utf8) },
                        value: Array(#"{"aps":{"content-available":1},"type":"\#(value.0)"}"#.utf8), receivedAtMs: WallClock.nowMs())
        })
        var load = dispatcher.loadByType()
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        // The oldest running job's age grows while it runs.
        while (load.first?.oldestRunningAge ?? .zero) < .milliseconds(50) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            load = dispatcher.loadByType()
        }
        #expect(load.map(\.type) == ["a", "b"])
        #expect(load.map(\.running) == [1, 1])
        #expect(load.map(\.waiting) == [1, 1])
        #expect((load.first?.oldestRunningAge ?? .zero) >= .milliseconds(50))
        await hold.open()
        await dispatcher.waitUntilIdle()
        #expect(dispatcher.loadByType().isEmpty)
    }
}
