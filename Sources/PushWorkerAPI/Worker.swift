/// A worker runs the jobs of one or more payload `type`s, like an app's `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
///
/// `perform` runs under a budget (30 s by default). At the deadline its task is cancelled: check
/// `Task.isCancelled` / `Task.checkCancellation()` or use cancellation-aware APIs, and size I/O timeouts
/// from ``Job/remaining``. The `timeout` result is reported at the deadline whether or not the worker
/// stops; a worker that keeps running is logged and counted.
public protocol Worker: Sendable {
    /// Runs one job.
    /// - Returns: the outcome (`newData`, `noData` or `failed`, with an optional reason and detail).
    /// - Throws: any error: the result is `failed` / `workerError` with the error as detail.
    func perform(_ job: Job) async throws -> WorkerOutcome
}

/// A worker as routed: its name (the result's `worker` field), the worker and its budget.
public struct RegisteredWorker: Sendable {
    /// The worker's name, reported in the result's `worker` field, e.g. `exec:content-update`.
    public var name: String
    /// The worker.
    public var worker: any Worker
    /// The time the worker gets from its start (the contract's budget; default 30 s).
    public var budget: Duration
    /// The most jobs of this worker running at once, or `nil` for no limit beyond the dispatcher's
    /// `maxInFlight`. Jobs held back by it do not hold back other workers' jobs, and their budget has not
    /// started.
    public var maxConcurrent: Int?

    /// Creates a registration.
    public init(name: String, worker: any Worker, budget: Duration, maxConcurrent: Int? = nil) {
        self.name = name
        self.worker = worker
        self.budget = budget
        self.maxConcurrent = maxConcurrent.map { max(1, $0) }
    }
}
