import CPushWorkerProcess
import Foundation
import Glibc
import Synchronization

/// Waits for one child to end and keeps how it ended for ``ChildProcess``.
///
/// Where the kernel has pidfds (Linux 5.3), the child's pidfd is watched by the ``ProcessEventLoop``'s one
/// thread, and the child is reaped from there (`waitid(P_PIDFD)`, or `waitpid` on Linux 5.3 which lacks
/// it): no thread per child. Signals go through the pidfd (`pidfd_send_signal`), which never reaches
/// another process, even once the number has been given to one.
///
/// Elsewhere a thread of its own waits (`waitid` blocks: never on the cooperative pool): it first waits
/// with `WNOWAIT`, which leaves the ended child a zombie, and only then reaps it with `waitpid` while
/// holding the lock ``signal(_:)`` takes, so a signal is never sent to the number once the kernel may have
/// given it to another process.
final class ChildExitWatch: Sendable {
    private struct State {
        var termination: ChildProcessTermination?
        var waiters: [CheckedContinuation<ChildProcessTermination, Never>] = []
        /// The child's pidfd while it is watched by the event loop, else -1.
        var pidfd: Int32 = -1
    }

    let pid: pid_t
    private let state = Mutex(State())

    init(pid: pid_t) { self.pid = pid }

    /// Starts watching the child (the watch holds this value until the child has ended).
    func start() {
        if let loop = ProcessEventLoop.shared {
            let pidfd = pw_pidfd_open(pid)
            if pidfd >= 0 {
                state.withLock { $0.pidfd = pidfd }
                let added = loop.add(pidfd, events: PW_EPOLL_IN) { [self] _, token in
                    guard let descriptor = reapThroughPidfd() else { return }
                    loop.remove(token, descriptor: descriptor)
                    close(descriptor)
                }
                if added != nil { return }
                state.withLock { $0.pidfd = -1 }
                close(pidfd)
            }
        }
        let thread = Thread { [self] in watch() }
        thread.name = "pushworker-child-wait"
        thread.start()
    }

    /// Reaps the child once its pidfd is readable (it has ended).
    /// - Returns: the pidfd to close, or `nil` while the child still runs.
    private func reapThroughPidfd() -> Int32? {
        let (ended, waiters, termination) = state.withLock { state -> (Int32?, [CheckedContinuation<ChildProcessTermination, Never>], ChildProcessTermination?) in
            guard state.pidfd >= 0 else { return (nil, [], nil) }
            var ended: Int32 = 0
            var code: Int32 = 0
            var status: Int32 = 0
            let termination: ChildProcessTermination
            if pw_pidfd_reap(state.pidfd, &ended, &code, &status) == 0 {
                guard ended != 0 else { return (nil, [], nil) }
                termination = code == 1 ? .exited(status) : .signaled(status)
            } else if errno == EINVAL {
                // Linux 5.3: pidfds, but no waitid(P_PIDFD). The pidfd is readable, so the child has ended.
                var waitStatus: Int32 = 0
                var reaped: pid_t
                repeat { reaped = waitpid(pid, &waitStatus, WNOHANG) } while reaped < 0 && errno == EINTR
                guard reaped != 0 else { return (nil, [], nil) }
                termination = reaped == pid ? (ChildProcessTermination(waitStatus: waitStatus) ?? .unknown(errno: 0)) : .unknown(errno: errno)
            } else {
                termination = .unknown(errno: errno)
            }
            let descriptor = state.pidfd
            state.pidfd = -1
            state.termination = termination
            defer { state.waiters = [] }
            return (descriptor, state.waiters, termination)
        }
        if let termination { for waiter in waiters { waiter.resume(returning: termination) } }
        return ended
    }

    private func watch() {
        var info = siginfo_t()
        var waited: Int32
        repeat { waited = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while waited < 0 && errno == EINTR
        let (termination, waiters) = state.withLock { state in
            // Under the lock on purpose (see the type's comment); the child has ended, so this returns at once.
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
            let termination: ChildProcessTermination = reaped == pid
                ? (ChildProcessTermination(waitStatus: status) ?? .unknown(errno: 0))
                : .unknown(errno: errno)
            state.termination = termination
            let waiters = state.waiters
            state.waiters = []
            return (termination, waiters)
        }
        for waiter in waiters { waiter.resume(returning: termination) }
    }

    /// How the child ended, or `nil` while it runs (or has ended but is not reaped yet).
    var termination: ChildProcessTermination? { state.withLock { $0.termination } }

    /// Waits until the child has ended (without holding a thread).
    func wait() async -> ChildProcessTermination {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> ChildProcessTermination? in
                if let termination = state.termination { return termination }
                state.waiters.append(continuation)
                return nil
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    /// Sends `number` to the child unless it has been reaped.
    /// - Returns: whether the signal was sent.
    func signal(_ number: Int32) -> Bool {
        // Under the lock: it never blocks, and it keeps the reaping (above) from closing the pidfd or
        // recycling the pid in between.
        state.withLock { state in
            guard state.termination == nil else { return false }
            return state.pidfd >= 0 ? pw_pidfd_send_signal(state.pidfd, number) == 0 : kill(pid, number) == 0
        }
    }
}
