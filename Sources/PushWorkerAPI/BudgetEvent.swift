/// Something that happened to a worker run under its budget, told to the executor's observer.
public enum BudgetEvent: Sendable, Equatable {
    /// The run reached its deadline: its task was cancelled and `failed`/`timeout` reported.
    case timedOut(type: String?, worker: String)
    /// The worker was still running ``BudgetedExecutor/cancellationGrace`` after its deadline, or finished
    /// later than that: it ignores cancellation. Told once per run, as soon as it is known (a worker that
    /// never returns is counted too).
    case ignoredCancellation(type: String?, worker: String)
}
