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
