import Foundation
import Glibc
import Synchronization

/// Waits for one child to end, on a thread of its own (`waitid` blocks: never on the cooperative pool),
/// and keeps how it ended for ``ChildProcess``.
///
/// The thread first waits with `WNOWAIT`, which leaves the ended child a zombie, and only then reaps it
/// with `waitpid` while holding the lock ``signal(_:)`` takes: so a signal is never sent to the number
/// once the kernel may have given it to another process.
final class ChildExitWatch: Sendable {
    private struct State {
        var termination: ChildProcessTermination?
        var waiters: [CheckedContinuation<ChildProcessTermination, Never>] = []
    }

    let pid: pid_t
    private let state = Mutex(State())

    init(pid: pid_t) { self.pid = pid }

    /// Starts the waiting thread (it holds this value until the child has ended).
    func start() {
        let thread = Thread { [self] in watch() }
        thread.name = "pushworker-child-wait"
        thread.start()
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
        // kill(2) under the lock: it never blocks, and it keeps the reaping (above) from recycling the pid in between.
        state.withLock { state in state.termination == nil && kill(pid, number) == 0 }
    }
}
