import Dispatch
import Synchronization

/// Starts the exec worker's programs one at a time, on a serial queue of its own (one thread at most), never
/// on the cooperative pool.
///
/// `posix_spawn` blocks its caller until the program is exec'd, and the kernel copies this process's
/// descriptor table into the new process, which the program then closes (close-on-exec, `closefrom`): with
/// thousands of programs running (two or three pipes each) a start takes milliseconds. On the cooperative
/// pool (two threads on two cores) thousands of starts kept the jobs of finished programs from resuming
/// until their deadline. Starts are serialised by ``SpawnGate`` anyway, so one queue costs no throughput.
enum ProgramStarter {
    private static let queue = DispatchQueue(label: "pushworker-program-start")

    /// Runs `start` on the queue and returns what it returned. A task cancelled while its start waits in the
    /// queue does not start its program: it gets `CancellationError`.
    static func start<T: Sendable>(_ start: @escaping @Sendable () throws -> T) async throws -> T {
        let cancelled = Cancellation()
        // The result goes through a lock, not the continuation's value alone: a resume on the queue's thread
        // carries no happens-before edge that ThreadSanitizer sees (it reported the started child's fields as
        // racing with their initialisation).
        let outcome = Mutex<Result<T, any Error>?>(nil)
        try await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async {
                    let result: Result<T, any Error> = cancelled.isSet ? .failure(CancellationError()) : Result { try start() }
                    outcome.withLock { $0 = result }
                    continuation.resume()
                }
            }
        } onCancel: {
            cancelled.set()
        }
        guard let result = outcome.withLock({ $0 }) else { throw CancellationError() }
        return try result.get()
    }

    private final class Cancellation: Sendable {
        private let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .acquiring) }
        func set() { flag.store(true, ordering: .releasing) }
    }
}
