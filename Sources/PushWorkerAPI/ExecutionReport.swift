/// How one worker run ended, with its timings.
public struct ExecutionReport: Sendable {
    /// The outcome: the worker's, `failed`/`workerError` if it threw, `failed`/`timeout` at the deadline.
    public var outcome: WorkerOutcome
    /// When the worker started, UNIX milliseconds.
    public var startedAtMs: Int64
    /// When the outcome was decided, UNIX milliseconds.
    public var finishedAtMs: Int64
    /// The run time in milliseconds, from the monotonic clock (the budget at a timeout).
    public var durationMs: Double
    /// Whether the budget ran out.
    public var timedOut: Bool

    /// Creates a report (the executor and the dispatcher build them).
    package init(outcome: WorkerOutcome, startedAtMs: Int64, finishedAtMs: Int64, durationMs: Double, timedOut: Bool) {
        self.outcome = outcome
        self.startedAtMs = startedAtMs
        self.finishedAtMs = finishedAtMs
        self.durationMs = durationMs
        self.timedOut = timedOut
    }
}
