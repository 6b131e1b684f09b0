/// An error a worker throws to say that its job failed for a reason that may pass (a dependency is down,
/// a rate limit was hit): the result is `failed` / `workerError` as for any thrown error, and the job runs
/// again as its type's ``RetryPolicy`` says.
///
/// ```swift
/// struct BackendUnavailable: RetryableError { var description: String { "backend answered 503" } }
/// ```
/// Any other error is final. To retry with a reason of your own, return
/// `WorkerOutcome.failed("rateLimited", retryable: true)` instead.
public protocol RetryableError: Error {}
