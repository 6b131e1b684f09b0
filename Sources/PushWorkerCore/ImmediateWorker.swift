/// A worker that can sometimes answer at once, without suspending: the dispatcher then runs it on the
/// submitting thread, with no task, timer or thread hop (it cannot outlive any budget).
protocol ImmediateWorker: Worker {
    /// The outcome, or `nil` when the job needs ``Worker/perform(_:)``.
    func immediateOutcome(for job: Job) -> WorkerOutcome?
}
