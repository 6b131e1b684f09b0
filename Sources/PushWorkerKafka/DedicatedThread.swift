import Foundation
import Synchronization

/// Runs blocking work off the cooperative thread pool.
public enum DedicatedThread {
    /// Runs `body` on a new thread and returns its result to the awaiting task. Use it for blocking
    /// librdkafka calls (commit, close, metadata) that must never block the cooperative pool.
    ///
    /// `body` (and what it captures, e.g. a client handle) is released before the caller resumes, so a
    /// client used only here is destroyed by the time this returns.
    /// - Parameter name: the thread's name, shown in debuggers.
    /// - Throws: whatever `body` throws.
    public static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let work = WorkBox(body)
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var taken = work.take()
                let result = Result { try taken?() ?? { throw CancellationError() }() }
                taken = nil
                continuation.resume(with: result)
            }
            thread.name = name
            thread.start()
        }
    }
}

/// Holds a closure until the thread takes it, so the thread object does not keep its captures alive.
private final class WorkBox<T>: Sendable {
    private let body: Mutex<(@Sendable () throws -> T)?>
    init(_ body: @escaping @Sendable () throws -> T) { self.body = Mutex(body) }
    func take() -> (@Sendable () throws -> T)? { body.withLock { body in defer { body = nil }; return body } }
}
