import Foundation
import PushWorkerCore
import Synchronization

/// The process's handling of SIGTERM, SIGINT and SIGPIPE, installed by the first instruction of
/// ``PushWorkerCommandLine/main(_:)``.
///
/// - SIGTERM and SIGINT are caught (`sigaction`, never ignored or blocked, so a program an exec worker
///   starts begins with the default dispositions: a caught signal is reset by `execve`, an ignored or
///   blocked one would be inherited). The handler only writes the signal's number to a pipe; a dedicated
///   thread reads it and acts:
///   - the first signal calls every registered stop action (``SignalWatcher``); a signal that arrives
///     before any is registered is kept and handed to the first one, so a command that registers one
///     (`run`, `dev`, `results`, `redrive`) stops gracefully however early the signal came;
///   - once a command has said it has no graceful stop (``useDefaultAction()``), a signal ends the process
///     by the signal's default action, as if nothing had been installed;
///   - a second signal ends the process at once with status 130, unless a registered watcher has a second
///     action (``SignalWatcher/init(onStop:onSecondSignal:)``): then the second signal calls those, and a
///     third ends the process at once with status 130.
/// - The three are unblocked once their handlers are in place: a launcher that blocks them before `exec`
///   (covering the dynamic loader's few milliseconds before `main`) has a signal sent meanwhile handled
///   then.
/// - SIGPIPE is caught by a handler that does nothing, so a write to a pipe whose reader has gone fails
///   with `EPIPE` (and the caller decides: the logger drops the line, ``Output`` ends the command as `cat`
///   does) instead of ending the process.
enum ProcessSignals {
    private static let state = Mutex(SignalDispatch())
    private static let installed = Atomic<Bool>(false)

    /// Installs the handlers and starts the dispatcher thread; later calls do nothing.
    static func install() {
        guard !installed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            // No pipe (descriptor limit reached at start-up): keep the default actions, which stop the
            // process; nothing better can be done without one.
            return
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        // A full pipe must never block the handler: the dispatcher reads every byte, and more than a
        // pipe's worth of pending signals only means that more than two arrived.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        signalPipeWriteEnd = fds[1]
        let readEnd = fds[0]
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    received(Int32(byte))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        thread.name = "pushworker-signals"
        thread.start()
        for number in [SIGTERM, SIGINT] { setHandler(number, recordSignal) }
        setHandler(SIGPIPE, ignoreSignal)
        // A launcher may have blocked these signals to cover the moments before `main` (the mask is
        // inherited across exec, and so is a signal pending in it): unblock them now that the handlers are
        // in place, so such a signal is handled here and no thread created later inherits the block (nor
        // the programs exec workers start).
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&handled, number) }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
    }

    /// Says that the running command has no graceful stop: a signal received so far, or from now on, ends
    /// the process by its default action.
    static func useDefaultAction() {
        if let pending = state.withLock({ $0.useDefaultAction() }) { endByDefaultAction(pending) }
    }

    /// Registers a stop action, called (on the signal thread) by the first SIGTERM or SIGINT, or at once
    /// when one has already arrived; and optionally a second action, called by the second signal instead
    /// of exiting (at once when two have already arrived).
    /// - Returns: the id for ``unregister(_:)``.
    static func register(_ action: @escaping @Sendable () -> Void, second: (@Sendable () -> Void)? = nil) -> Int {
        install()
        let (id, runNow) = state.withLock { $0.register(SignalDispatch.Actions(first: action, second: second)) }
        runNow.forEach { $0() }
        return id
    }

    /// Removes a stop action.
    static func unregister(_ id: Int) {
        state.withLock { $0.unregister(id) }
    }

    /// The dispatcher's reaction to one signal.
    private static func received(_ number: Int32) {
        switch state.withLock({ $0.received(number) }) {
        case .nothing: break
        case .run(let actions): actions.forEach { $0() }
        case .defaultAction: endByDefaultAction(number)
        case .exitNow:
            Output.error("pushworker: second signal, exiting now")
            _exit(130)
        }
    }

    /// Restores the default action of `number` and raises it, so the process ends as if nothing had
    /// caught it (a shell then sees 128 + the signal's number).
    static func endByDefaultAction(_ number: Int32) {
        signal(number, SIG_DFL)
        raise(number)
        // Only reached if the default action does not end the process.
        _exit(128 + number)
    }

    private static func setHandler(_ number: Int32, _ handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        // Interrupted system calls elsewhere in the process restart instead of failing with EINTR.
        action.sa_flags = SA_RESTART
        sigaction(number, &action, nil)
    }
}

/// The write end of the signal pipe. Set once by ``ProcessSignals/install()`` before the handlers are
/// installed and never changed, so the handler's read of it is a plain load of a published value.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// The SIGTERM/SIGINT handler: only async-signal-safe calls (`write(2)`), `errno` preserved.
private func recordSignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipeWriteEnd, &byte, 1)
    errno = saved
}

/// The SIGPIPE handler: does nothing, so the failing write returns `EPIPE`.
private func ignoreSignal(_ number: Int32) {}
