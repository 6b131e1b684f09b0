/// What a worker returns: a result with an optional reason and human-readable detail.
public struct WorkerOutcome: Sendable, Hashable {
    /// The result.
    public var result: BackgroundFetchResult
    /// A reason (a worker-defined string such as `"unchanged"`), or `nil`.
    public var reason: ResultReason?
    /// Human-readable detail (error text, exit status, HTTP status), or `nil`.
    public var detail: String?
    /// Whether a `failed` outcome may pass if the job runs again (a dependency was down, a rate limit was
    /// hit): then the job is retried as its type's ``RetryPolicy`` says. Default `false`: the failure is
    /// final. Ignored for `newData` and `noData`.
    public var retryable: Bool

    /// Creates an outcome.
    public init(_ result: BackgroundFetchResult, reason: ResultReason? = nil, detail: String? = nil, retryable: Bool = false) {
        self.result = result
        self.reason = reason
        self.detail = detail
        self.retryable = retryable && result == .failed
    }

    /// `newData` with no reason.
    public static let newData = WorkerOutcome(.newData)
    /// `noData` with no reason.
    public static let noData = WorkerOutcome(.noData)
    /// `failed` with an optional reason and detail; `retryable` when running the job again may succeed
    /// (``RetryPolicy``).
    public static func failed(_ reason: ResultReason? = nil, detail: String? = nil, retryable: Bool = false) -> WorkerOutcome {
        WorkerOutcome(.failed, reason: reason, detail: detail, retryable: retryable)
    }
}
