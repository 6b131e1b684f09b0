import Synchronization

/// A cancellable sleep on a ``DeadlineTimer`` thread of its own, for sleeps of a few fixed lengths
/// (the noop worker's `delayMs`): the same as `Task.sleep(for:)` for the caller, at a fraction of its cost.
///
/// `Task.sleep` creates a second task and a Dispatch timer source per call, and libdispatch keeps its timers
/// in a heap re-sorted on each one: with 100 000 jobs sleeping at once that was about 2.5 KB and a timer
/// heap update per job (`Benchmarks/concurrency.py`, docs/performance-latency.md). Here a sleep is one
/// small object, its own deadline entry, kept in a first-in first-out list per length (O(1) to add, fire
/// and cancel). The thread (`pushworker-sleeps`) starts with the first sleep and lives as long as the process.
package enum TimerSleep {
    /// The process-wide timer of these sleeps.
    private static let timer = DeadlineTimer(threadName: "pushworker-sleeps")

    /// Suspends the task for `duration` (at least; the thread fires within a few hundred microseconds of the
    /// time), or until the task is cancelled.
    /// - Throws: `CancellationError` when the task is cancelled before or while it sleeps, as `Task.sleep` does.
    package static func sleep(for duration: Duration) async throws {
        let sleeper = Sleeper(for: duration)
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                sleeper.begin(continuation, on: timer)
            }
        } onCancel: {
            sleeper.cancel(on: timer)
        }
    }

    /// One sleep: its continuation until the timer or a cancellation resumes it, exactly once. It is its own
    /// deadline entry.
    ///
    /// `@unchecked Sendable` (from ``DeadlineTimer/Entry``): its own state is in a `Mutex`.
    private final class Sleeper: DeadlineTimer.Entry, @unchecked Sendable {
        private enum Phase {
            /// Not begun yet (a cancellation may come first).
            case idle
            /// The continuation waits.
            case sleeping(UnsafeContinuation<Void, any Error>)
            /// Cancelled before it began: ``begin(_:on:)`` resumes at once.
            case cancelledEarly
            /// Resumed.
            case done
        }

        private let phase = Mutex(Phase.idle)

        /// A sleep from now for `duration`.
        init(for duration: Duration) {
            super.init(deadline: .now.advanced(by: duration), budget: duration)
        }

        func begin(_ continuation: UnsafeContinuation<Void, any Error>, on timer: DeadlineTimer) {
            let cancelled = phase.withLock { phase -> Bool in
                if case .cancelledEarly = phase { return true }
                phase = .sleeping(continuation)
                return false
            }
            if cancelled {
                phase.withLock { $0 = .done }
                continuation.resume(throwing: CancellationError())
                return
            }
            timer.schedule(self)
            // Cancelled meanwhile (the cancellation found nothing scheduled yet): it must not stay scheduled.
            let resumed = phase.withLock { phase -> Bool in
                if case .done = phase { return true }
                return false
            }
            if resumed { timer.cancel(self) }
        }

        /// The time came (on the timer's thread).
        override func fire() {
            let continuation = phase.withLock { phase -> UnsafeContinuation<Void, any Error>? in
                guard case .sleeping(let continuation) = phase else { return nil }
                phase = .done
                return continuation
            }
            continuation?.resume()
        }

        func cancel(on timer: DeadlineTimer) {
            let continuation = phase.withLock { phase -> UnsafeContinuation<Void, any Error>? in
                switch phase {
                case .idle:
                    phase = .cancelledEarly
                    return nil
                case .sleeping(let continuation):
                    phase = .done
                    return continuation
                case .cancelledEarly, .done:
                    return nil
                }
            }
            guard let continuation else { return }
            timer.cancel(self)
            continuation.resume(throwing: CancellationError())
        }
    }
}
