/// The built-in `noop` worker (contract section 6): returns a configured outcome after an optional
/// delay. For demos, tests and benchmarks.
public struct NoopWorker: Worker {
    /// The outcome returned.
    public var outcome: WorkerOutcome
    /// How long to wait before returning (default zero). The wait stops early, with `CancellationError`,
    /// when the budget runs out. It is a timer, not a `Task.sleep`: 100 000 jobs waiting at once cost a
    /// small object and a timer-list entry each (`TimerSleep`).
    public var delay: Duration

    /// Creates a noop worker.
    public init(outcome: WorkerOutcome = .noData, delay: Duration = .zero) {
        self.outcome = outcome
        self.delay = delay
    }

    /// Waits the configured delay (cancellable), then returns the configured outcome.
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        if delay > .zero { try await TimerSleep.sleep(for: delay) }
        return outcome
    }
}

extension NoopWorker: ImmediateWorker {
    func immediateOutcome(for job: Job) -> WorkerOutcome? {
        delay > .zero ? nil : outcome
    }
}
