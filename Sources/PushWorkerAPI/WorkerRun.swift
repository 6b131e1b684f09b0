import Synchronization

/// One worker run: who decides its outcome (the worker or the deadline) and its task, for cancellation.
final class WorkerRun: Sendable {
    private struct State {
        var claimed = false
        var cancelled = false
        var finished = false
        var ignoredCancellationCounted = false
        var task: Task<Void, Never>?
    }
    private let state = Mutex(State())

    /// Marks the worker returned (or threw) and returns true if this decides the outcome (the deadline
    /// has not claimed it): one lock for both.
    func finishAndClaim() -> Bool {
        state.withLock { state in
            state.finished = true
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

    /// Returns true to the first caller only.
    func claim() -> Bool {
        state.withLock { state in
            if state.claimed { return false }
            state.claimed = true
            return true
        }
    }

    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !state.claimed { state.task = task }
            return false
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }
}
