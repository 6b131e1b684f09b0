import Dispatch
import Synchronization

/// Batches of outputs on their way from the threads that decide them (the consumer's, the workers') to
/// the publishing thread, in order (``ResultPublisher/submit(_:)``). Encoding and producing a result then
/// runs beside the consumer's thread instead of on it, so that polling, validating and routing the next
/// records and publishing the last ones use both cores.
///
/// The publishing thread sleeps on a semaphore while the queue is empty; ``push(_:)`` wakes it.
final class PublicationQueue: Sendable {
    private struct State {
        var batches: [[Publication]] = []
        /// Publications pushed and not yet published (``done(_:)``): counted as unacknowledged outputs.
        var waiting = 0
        /// Whether the publishing thread waits (or is about to wait) on ``wake``.
        var sleeping = false
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Publications pushed and not yet published.
    var waiting: Int { state.withLock { $0.waiting } }

    /// Queues `batch` for the publishing thread. Returns `false` (and queues nothing) once closed.
    func push(_ batch: [Publication]) -> Bool {
        let (accepted, wakeUp) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.batches.append(batch)
            state.waiting += batch.count
            defer { state.sleeping = false }
            return (true, state.sleeping)
        }
        if wakeUp { wake.signal() }
        return accepted
    }

    /// The batches queued so far, in order, waiting while there are none; `nil` once closed and empty.
    /// Blocking: the publishing thread only.
    func next() -> [[Publication]]? {
        while true {
            let taken = state.withLock { state -> [[Publication]]? in
                if !state.batches.isEmpty {
                    defer { state.batches.removeAll(keepingCapacity: true) }
                    return state.batches
                }
                if state.closed { return nil }
                state.sleeping = true
                return []
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            wake.wait()
        }
    }

    /// Notes that `count` publications taken by ``next()`` were published.
    func done(_ count: Int) {
        state.withLock { $0.waiting -= count }
    }

    /// Takes no more batches; ``next()`` returns what is queued, then `nil`.
    func close() {
        let wakeUp = state.withLock { state -> Bool in
            state.closed = true
            defer { state.sleeping = false }
            return state.sleeping
        }
        if wakeUp { wake.signal() }
    }
}
