import Synchronization

/// Turns SIGTERM and SIGINT into a graceful stop while it lives: the first signal calls the action (at
/// once if one arrived before the watcher was created, however early after launch); a second signal exits
/// at once with status 130. See ``ProcessSignals`` for how the signals are caught.
public final class SignalWatcher: Sendable {
    private let id: Int

    /// Watches SIGTERM and SIGINT until the watcher is freed.
    /// - Parameter onStop: called once, on the signal thread; it must not block for long.
    public init(onStop: @escaping @Sendable () -> Void) {
        id = ProcessSignals.register(onStop)
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
