import Synchronization

/// One worker run: who decides its outcome (the worker, the deadline, or a fast stop that cuts it short with
/// ``BudgetedExecutor/abort(_:)``), its task, for cancellation, and its deadline entry.
///
/// Made by the caller of ``BudgetedExecutor/start(_:on:run:completion:)`` before the run starts, so that a
/// fast stop can cut short a run that is about to start as well as one that is running.
package final class WorkerRun: Sendable {
    private struct State {
        var claimed = false
        var cancelled = false
        var finished = false
        var ignoredCancellationCounted = false
        var task: Task<Void, Never>?
        /// The deadline entry while it may still fire (cleared once the outcome is claimed: the entry's
        /// action holds this run).
        var entry: DeadlineTimer.Entry?
    }
    private let state = Mutex(State())

    /// A run not started yet.
    package init() {}

    /// Marks the worker returned (or threw) and returns true if this decides the outcome (the deadline
    /// has not claimed it): one lock for both.
    func finishAndClaim() -> Bool {
        state.withLock { state in
            state.finished = true
            state.entry = nil
            if state.claimed { return false }
            state.claimed = true
            return true
        }
    }

    /// Whether the worker has not returned yet.
    var isRunning: Bool { state.withLock { !$0.finished } }

    /// Returns true to the first caller only: the run is counted as ignoring cancellation once.
    func flagIgnoredCancellation() -> Bool {
        state.withLock { state in
            if state.ignoredCancellationCounted { return false }
            state.ignoredCancellationCounted = true
            return true
        }
    }

    /// Whether the outcome is decided (by the worker, the deadline, or an abort).
    var isClaimed: Bool { state.withLock { $0.claimed } }

    /// Returns true to the first caller only.
    func claim() -> Bool {
        state.withLock { state in
            if state.claimed { return false }
            state.claimed = true
            return true
        }
    }

    /// Attaches the run's task and deadline entry. Returns false if the run was cancelled meanwhile: the task
    /// is then cancelled here, and the caller cancels the entry.
    func attach(_ task: Task<Void, Never>, entry: DeadlineTimer.Entry) -> Bool {
        let cancelNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !state.claimed { state.task = task }
            if !state.claimed && !state.finished { state.entry = entry }
            return false
        }
        if cancelNow { task.cancel() }
        return !cancelNow
    }

    /// Cancels the task (now, or when it is attached). Returns the deadline entry, if it may still fire.
    @discardableResult
    func cancel() -> DeadlineTimer.Entry? {
        let (task, entry) = state.withLock { state -> (Task<Void, Never>?, DeadlineTimer.Entry?) in
            state.cancelled = true
            defer { state.task = nil; state.entry = nil }
            return (state.task, state.entry)
        }
        task?.cancel()
        return entry
    }
}
