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
        /// The count a thread waits in ``waitForRoom(below:timeoutMs:)`` to see ``waiting`` fall under.
        var roomWanted: Int?
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let room = DispatchSemaphore(value: 0)

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
        let signal = state.withLock { state -> Bool in
            state.waiting -= count
            guard let wanted = state.roomWanted, state.waiting < wanted else { return false }
            state.roomWanted = nil
            return true
        }
        if signal { room.signal() }
    }

    /// Waits, up to `timeoutMs`, until fewer than `limit` publications wait: the consumer's thread calls
    /// it before taking more records, so that it does not run ahead of the publishing thread without
    /// bound (the queue's records are held in memory until published). Returns at once when they are
    /// already fewer, or the queue is closed. Blocking: a dedicated thread only, one at a time.
    func waitForRoom(below limit: Int, timeoutMs: Int) {
        let mustWait = state.withLock { state -> Bool in
            guard state.waiting >= limit, !state.closed else { return false }
            state.roomWanted = limit
            return true
        }
        guard mustWait else { return }
        if room.wait(timeout: .now() + .milliseconds(timeoutMs)) == .timedOut {
            // Not signalled in time: withdraw the wish; a signal sent meanwhile is taken back too.
            let signalled = state.withLock { state -> Bool in
                defer { state.roomWanted = nil }
                return state.roomWanted == nil
            }
            if signalled { room.wait() }
        }
    }

    /// Takes no more batches; ``next()`` returns what is queued, then `nil`.
    func close() {
        let (wakeUp, roomWaiter) = state.withLock { state -> (Bool, Bool) in
            state.closed = true
            defer {
                state.sleeping = false
                state.roomWanted = nil
            }
            return (state.sleeping, state.roomWanted != nil)
        }
        if wakeUp { wake.signal() }
        if roomWaiter { room.signal() }
    }
}
