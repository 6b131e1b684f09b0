/// A worker as routed: its name (the result's `worker` field), the worker and its budget.
public struct RegisteredWorker: Sendable {
    /// The worker's name, reported in the result's `worker` field, e.g. `exec:content-update`.
    public var name: String {
        get { storage.values.name }
        set { storage.change { $0.name = newValue } }
    }
    /// The worker.
    public var worker: any Worker {
        get { storage.values.worker }
        set { storage.change { $0.worker = newValue } }
    }
    /// The time the worker gets from its start (the contract's budget; default 30 s). ``init(name:worker:budget:maxConcurrent:)``
    /// clamps it to the configuration file's range, 1 ms … 2 147 483 647 ms (about 24.8 days).
    public var budget: Duration {
        get { storage.values.budget }
        set { storage.change { $0.budget = newValue } }
    }
    /// The most jobs of this worker running at once, or `nil` for no limit beyond the dispatcher's
    /// `maxInFlight`. Jobs held back by it do not hold back other workers' jobs, and their budget has not
    /// started.
    public var maxConcurrent: Int? {
        get { storage.values.maxConcurrent }
        set { storage.change { $0.maxConcurrent = newValue } }
    }
    /// When its `failed` jobs run again, or `nil` (the default) for the service's default policy
    /// (`retries` in the configuration file; ``RetryPolicy/standard`` unless set).
    public var retry: RetryPolicy? {
        get { storage.values.retry }
        set { storage.change { $0.retry = newValue } }
    }

    /// The stored values, in one immutable shared box: every routed job holds its worker's registration
    /// (twice while it runs: the dispatcher's job and the executor's run), and a box makes each of those an
    /// 8-byte reference instead of about 100 bytes of strings, an existential and a policy, and a copy one
    /// retain. A change makes a new box.
    private struct Fields: Sendable {
        var name: String
        var worker: any Worker
        var budget: Duration
        var maxConcurrent: Int?
        var retry: RetryPolicy?
    }

    private var storage: SharedValues<Fields>

    /// The longest budget: 2 147 483 647 ms (about 24.8 days), the largest `budgetMs` the configuration file takes.
    public static let maxBudget = Duration.milliseconds(Int64(Int32.max))

    /// Creates a registration.
    /// - Parameters:
    ///   - budget: the worker's budget; below 1 ms counts as 1 ms, above ``maxBudget`` as ``maxBudget``
    ///     (a deadline further out than that would overflow the timers and UNIX-ms deadlines).
    ///   - maxConcurrent: the most of its jobs running at once (at least 1), or `nil` for no limit of its own.
    ///   - retry: its retry policy, or `nil` for the service's default.
    public init(name: String, worker: any Worker, budget: Duration, maxConcurrent: Int? = nil, retry: RetryPolicy? = nil) {
        storage = SharedValues(Fields(
            name: name, worker: worker, budget: min(max(budget, .milliseconds(1)), Self.maxBudget),
            maxConcurrent: maxConcurrent.map { max(1, $0) }, retry: retry))
    }
}
