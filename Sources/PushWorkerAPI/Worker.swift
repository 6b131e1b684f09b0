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
