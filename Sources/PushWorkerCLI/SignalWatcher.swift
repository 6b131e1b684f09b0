import Synchronization

/// Turns SIGTERM and SIGINT into a graceful stop while it lives: the first signal calls the action (at
/// once if one arrived before the watcher was created, however early after launch); a second signal exits
/// at once with status 130, or calls the watcher's second action when it has one. See ``ProcessSignals``
/// for how the signals are caught.
public final class SignalWatcher: Sendable {
    private let id: Int

    /// Watches SIGTERM and SIGINT until the watcher is freed.
    /// - Parameter onStop: called once, on the signal thread; it must not block for long.
    public init(onStop: @escaping @Sendable () -> Void) {
        id = ProcessSignals.register(onStop)
    }

    /// Watches SIGTERM and SIGINT until the watcher is freed, with an action for the second signal instead
    /// of the exit: the first signal calls `onStop` (a graceful stop), the second `onSecondSignal` (e.g. a
    /// fast stop: cancelling the task that runs the service), and a third exits at once with status 130.
    /// - Parameters:
    ///   - onStop: called once, on the signal thread (at once if a signal has already arrived); it must not
    ///     block for long.
    ///   - onSecondSignal: called once, on the signal thread, by the second signal; it must not block for long.
    public init(onStop: @escaping @Sendable () -> Void, onSecondSignal: @escaping @Sendable () -> Void) {
        id = ProcessSignals.register(onStop, second: onSecondSignal)
    }

    /// Waits for the first SIGTERM or SIGINT (returns at once if one has already arrived).
    public static func waitForStop() async {
        let watcher = Mutex<SignalWatcher?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Atomic<Bool>(false)
            let made = SignalWatcher {
                if !once.exchange(true, ordering: .relaxed) { continuation.resume() }
            }
            watcher.withLock { $0 = made }
        }
        watcher.withLock { $0 = nil }
    }

    deinit {
        ProcessSignals.unregister(id)
    }
}
