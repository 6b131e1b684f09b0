import PushWorkerCore

/// A worker made from a closure, for tests: `ClosureWorker { job in .newData }`.
public struct ClosureWorker: Worker {
    private let body: @Sendable (Job) async throws -> WorkerOutcome

    /// Creates a worker that runs `body` for each job.
    public init(_ body: @escaping @Sendable (Job) async throws -> WorkerOutcome) {
        self.body = body
    }

    /// Calls the closure.
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        try await body(job)
    }
}
