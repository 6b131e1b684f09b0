import Dispatch
import Foundation
import Synchronization

/// Turns SIGTERM and SIGINT into a graceful stop: the first one calls the action; a second one exits at
/// once with status 130.
public final class SignalWatcher: Sendable {
    private let sources: Mutex<[any DispatchSourceSignal]>

    /// Watches SIGTERM and SIGINT until the watcher is freed.
    public init(onStop: @escaping @Sendable () -> Void) {
        var made: [any DispatchSourceSignal] = []
        let counter = Counter()
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if counter.increment() > 1 {
                    Output.error("pushworker: second signal, exiting now")
                    exit(130)
                }
                onStop()
            }
            source.resume()
            made.append(source)
        }
        sources = Mutex(made)
    }

    /// Waits for the first SIGTERM or SIGINT.
    public static func waitForStop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Counter()
            let watcher = SignalWatcher { if once.increment() == 1 { continuation.resume() } }
            Keeper.keep(watcher)
        }
    }

    deinit {
        sources.withLock { $0.forEach { $0.cancel() } }
    }

    private final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
    }

    private enum Keeper {
        static let kept = Mutex<[SignalWatcher]>([])
        static func keep(_ watcher: SignalWatcher) { kept.withLock { $0.append(watcher) } }
    }
}
