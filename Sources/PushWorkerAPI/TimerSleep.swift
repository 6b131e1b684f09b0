import Synchronization

/// A cancellable sleep on a ``DeadlineTimer`` thread of its own, for sleeps of a few fixed lengths
/// (the noop worker's `delayMs`): the same as `Task.sleep(for:)` for the caller, at a fraction of its cost.
///
/// `Task.sleep` creates a second task and a Dispatch timer source per call, and libdispatch keeps its timers
/// in a heap re-sorted on each one: with 100 000 jobs sleeping at once that was about 2.5 KB and a timer
/// heap update per job (`Benchmarks/concurrency.py`, docs/performance-latency.md). Here a sleep is one
/// small object and one deadline entry, kept in a first-in first-out list per length (O(1) to add, fire
/// and cancel). The thread (`pushworker-sleeps`) starts with the first sleep and lives as long as the process.
package enum TimerSleep {
    /// The process-wide timer of these sleeps.
    private static let timer = DeadlineTimer(threadName: "pushworker-sleeps")

    /// Suspends the task for `duration` (at least; the thread fires within a few hundred microseconds of the
    /// time), or until the task is cancelled.
    /// - Throws: `CancellationError` when the task is cancelled before or while it sleeps, as `Task.sleep` does.
    package static func sleep(for duration: Duration) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                sleeper.begin(continuation, duration: duration, on: timer)
            }
        } onCancel: {
            sleeper.cancel(on: timer)
        }
    }

    /// One sleep: its continuation until the timer or a cancellation resumes it, exactly once.
    private final class Sleeper: Sendable {
        private enum Phase {
            /// Not begun yet (a cancellation may come first).
            case idle
            /// The continuation waits; the entry once scheduled.
            case sleeping(UnsafeContinuation<Void, any Error>, DeadlineTimer.Entry?)
            /// Cancelled before it began: ``begin(_:duration:on:)`` resumes at once.
            case cancelledEarly
            /// Resumed.
            case done
        }

        private let phase = Mutex(Phase.idle)

        func begin(_ continuation: UnsafeContinuation<Void, any Error>, duration: Duration, on timer: DeadlineTimer) {
            let cancelled = phase.withLock { phase -> Bool in
                if case .cancelledEarly = phase { return true }
                phase = .sleeping(continuation, nil)
                return false
            }
            if cancelled {
                phase.withLock { $0 = .done }
                continuation.resume(throwing: CancellationError())
                return
            }
            // The action captures only this object: the entry needs no closure context of its own.
            let entry = timer.schedule(at: .now.advanced(by: duration), budget: duration) { self.fire() }
            let cancelNow = phase.withLock { phase -> Bool in
                // Cancelled (or fired) meanwhile: the entry must not stay scheduled.
                guard case .sleeping(let waiting, nil) = phase else { return true }
                phase = .sleeping(waiting, entry)
                return false
            }
            if cancelNow { timer.cancel(entry) }
        }

        /// The time came (on the timer's thread).
        private func fire() {
            let continuation = phase.withLock { phase -> UnsafeContinuation<Void, any Error>? in
                guard case .sleeping(let continuation, _) = phase else { return nil }
                phase = .done
                return continuation
            }
            continuation?.resume()
        }

        func cancel(on timer: DeadlineTimer) {
            let (continuation, entry) = phase.withLock { phase -> (UnsafeContinuation<Void, any Error>?, DeadlineTimer.Entry?) in
                switch phase {
                case .idle:
                    phase = .cancelledEarly
                    return (nil, nil)
                case .sleeping(let continuation, let entry):
                    phase = .done
                    return (continuation, entry)
                case .cancelledEarly, .done:
                    return (nil, nil)
                }
            }
            if let entry { timer.cancel(entry) }
            continuation?.resume(throwing: CancellationError())
        }
    }
}
