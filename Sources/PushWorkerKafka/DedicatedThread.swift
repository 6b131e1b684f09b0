import Foundation

/// Runs blocking work off the cooperative thread pool.
public enum DedicatedThread {
    /// Runs `body` on a new thread and returns its result to the awaiting task. Use it for blocking
    /// librdkafka calls (commit, close, metadata) that must never block the cooperative pool.
    /// - Parameter name: the thread's name, shown in debuggers.
    /// - Throws: whatever `body` throws.
    public static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
