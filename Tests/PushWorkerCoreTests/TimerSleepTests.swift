import Foundation
import Synchronization
import Testing
@testable import PushWorkerAPI

/// `TimerSleep`: the noop worker's cancellable sleep on a timer thread (what `Task.sleep` does for the caller).
@Suite struct TimerSleepTests {
    @Test(.timeLimit(.minutes(1)))
    func sleepsAtLeastItsDuration() async throws {
        let start = ContinuousClock.now
        try await TimerSleep.sleep(for: .milliseconds(120))
        #expect(start.duration(to: .now) >= .milliseconds(120))
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellationWhileSleepingThrowsAtOnce() async {
        let start = ContinuousClock.now
        let task = Task { try await TimerSleep.sleep(for: .seconds(40)) }
        try? await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        // Far below the 40 s, with room for a cooperative pool busy with parallel suites.
        #expect(start.duration(to: .now) < .seconds(10))
    }

    @Test(.timeLimit(.minutes(1)))
    func aCancelledTaskDoesNotSleep() async {
        let started = Mutex(false)
        let task = Task {
            // Wait until cancelled, without sleeping (the test cancels it right away).
            while !Task.isCancelled { await Task.yield() }
            started.withLock { $0 = true }
            let start = ContinuousClock.now
            do {
                try await TimerSleep.sleep(for: .seconds(40))
                return Duration.seconds(-1)
            } catch {
                #expect(error is CancellationError)
                return start.duration(to: .now)
            }
        }
        task.cancel()
        let slept = await task.value
        #expect(started.withLock { $0 })
        #expect(slept >= .zero && slept < .seconds(10), "slept \(slept) although cancelled before it began")
    }

    @Test(.timeLimit(.minutes(1)))
    func manySleepsOfTwoLengthsEachWakeAfterItsOwnLength() async throws {
        // Sleeps of one length share one list in the timer: interleaving two lengths checks that every
        // sleep of both lists fires, none before its time.
        let count = 200
        let start = ContinuousClock.now
        let wakes = try await withThrowingTaskGroup(of: (Duration, Duration).self) { group in
            for index in 0..<count {
                let length: Duration = index.isMultiple(of: 2) ? .milliseconds(50) : .milliseconds(250)
                group.addTask {
                    try await TimerSleep.sleep(for: length)
                    return (length, start.duration(to: .now))
                }
            }
            var wakes: [(Duration, Duration)] = []
            for try await wake in group { wakes.append(wake) }
            return wakes
        }
        #expect(wakes.count == count)
        for (length, woke) in wakes {
            #expect(woke >= length, "a sleep of \(length) woke after \(woke)")
        }
        #expect(wakes.filter { $0.0 == .milliseconds(50) }.count == count / 2)
    }
}
