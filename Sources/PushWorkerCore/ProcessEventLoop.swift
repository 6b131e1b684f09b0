import CPushWorkerProcess
import Foundation
import Glibc
import Synchronization

/// One thread that serves every running program of this process: their exits (a pidfd each, `pidfd_open(2)`),
/// their stdin, stdout and stderr pipes (non-blocking, `epoll(7)`) and their timers (the SIGKILL after a
/// program's termination grace). The thread count does not grow with the programs that run: 1 000 running
/// programs cost this one thread, not three each.
///
/// Handlers and timer actions run on the loop's thread, one at a time, and must not block: they read or
/// write what the kernel has ready, signal, resume continuations, log. Registration may come from any
/// thread (`epoll_ctl` is thread-safe); a new timer that is due before the loop's current wait wakes it
/// through an eventfd.
///
/// ``shared`` is `nil` where the kernel lacks epoll or eventfd; callers then use a thread per child, as
/// before. A kernel without pidfds (Linux < 5.3) still gets pipes and timers here; ``ChildExitWatch`` waits
/// for each exit on a thread of its own there.
final class ProcessEventLoop: Sendable {
    /// The loop of this process, started with its first registration.
    static let shared: ProcessEventLoop? = ProcessEventLoop()

    /// What the loop does when a descriptor is ready: called with the ready events (a mask of
    /// `PW_EPOLL_IN`, `PW_EPOLL_OUT`, `PW_EPOLL_HUP`, `PW_EPOLL_ERR`) and the registration's token (for
    /// ``remove(_:descriptor:)``; the handler may run before ``add(_:events:handler:)`` has returned).
    typealias Handler = @Sendable (_ events: UInt32, _ token: UInt64) -> Void

    private struct State {
        var handlers: [UInt64: Handler] = [:]
        var nextToken: UInt64 = 1
        var timers = DueHeap<@Sendable () -> Void>()
        var started = false
    }

    private let epoll: Int32
    private let wake: Int32
    private let state = Mutex(State())

    private init?() {
        let epoll = pw_epoll_create()
        guard epoll >= 0 else { return nil }
        let wake = pw_eventfd()
        guard wake >= 0 else {
            close(epoll)
            return nil
        }
        // Token 0 is the wake-up eventfd; handlers start at 1.
        guard pw_epoll_add(epoll, wake, PW_EPOLL_IN, 0) == 0 else {
            close(wake)
            close(epoll)
            return nil
        }
        self.epoll = epoll
        self.wake = wake
    }

    /// Calls `handler` on the loop's thread whenever `descriptor` has `events` ready (level-triggered), until
    /// ``remove(_:descriptor:)``. The descriptor stays the caller's: remove it before closing it.
    /// - Returns: the registration's token, or `nil` when `epoll_ctl` refused the descriptor (errno is set).
    func add(_ descriptor: Int32, events: UInt32, handler: @escaping Handler) -> UInt64? {
        let token = state.withLock { state -> UInt64 in
            defer { state.nextToken += 1 }
            state.handlers[state.nextToken] = handler
            return state.nextToken
        }
        startIfNeeded()
        guard pw_epoll_add(epoll, descriptor, events, token) == 0 else {
            _ = state.withLock { $0.handlers.removeValue(forKey: token) }
            return nil
        }
        return token
    }

    /// Changes the events a registered descriptor is watched for.
    func modify(_ token: UInt64, descriptor: Int32, events: UInt32) {
        _ = pw_epoll_modify(epoll, descriptor, events, token)
    }

    /// Stops watching `descriptor`; its handler is not called again once this returns on the loop's thread
    /// (from another thread, one call already under way may still finish).
    func remove(_ token: UInt64, descriptor: Int32) {
        _ = pw_epoll_remove(epoll, descriptor)
        _ = state.withLock { $0.handlers.removeValue(forKey: token) }
    }

    /// Runs `action` on the loop's thread once `delay` has passed.
    func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) {
        let due = Self.nowNs() + Self.nanoseconds(delay)
        let earliest = state.withLock { state -> Bool in
            let earliest = state.timers.earliestDueNs.map { due < $0 } ?? true
            state.timers.insert(action, dueNs: due)
            return earliest
        }
        startIfNeeded()
        if earliest { wakeUp() }
    }

    private func wakeUp() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wake, $0.baseAddress, 8) }
    }

    private func startIfNeeded() {
        let start = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard start else { return }
        let thread = Thread { [self] in run() }
        thread.name = "pushworker-proc"  // at most 15 bytes: pthread_setname_np refuses longer names
        thread.start()
    }

    private func run() {
        // Writes to a program's stdin after it has gone must fail with EPIPE, not kill pushworker with
        // SIGPIPE: blocked on this thread only.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        while true {
            let timeout = state.withLock { state -> Int32 in
                guard let due = state.timers.earliestDueNs else { return -1 }
                let waitNs = max(0, due - Self.nowNs())
                // Rounded up, so that a timer never fires a little early and makes the loop spin.
                return Int32(clamping: (waitNs + 999_999) / 1_000_000)
            }
            let count = tokens.withUnsafeMutableBufferPointer { tokenBuffer in
                events.withUnsafeMutableBufferPointer { eventBuffer in
                    pw_epoll_wait(epoll, tokenBuffer.baseAddress, eventBuffer.baseAddress, 64, timeout)
                }
            }
            for index in 0..<max(0, Int(count)) {
                if tokens[index] == 0 {
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { read(wake, $0.baseAddress, 8) }
                    continue
                }
                let token = tokens[index]
                let handler = state.withLock { $0.handlers[token] }
                handler?(events[index], token)
            }
            let due = state.withLock { $0.timers.popDue(nowNs: Self.nowNs()) }
            for action in due { action() }
        }
    }

    private static func nowNs() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
