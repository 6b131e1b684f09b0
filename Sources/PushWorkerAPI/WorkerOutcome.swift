/// What a worker returns: a result with an optional reason and human-readable detail.
public struct WorkerOutcome: Sendable, Hashable {
    /// The result.
    public var result: BackgroundFetchResult
    /// A reason (a worker-defined string such as `"unchanged"`), or `nil`.
    public var reason: ResultReason?
    /// Human-readable detail (error text, exit status, HTTP status), or `nil`.
    public var detail: String?

    /// Creates an outcome.
    public init(_ result: BackgroundFetchResult, reason: ResultReason? = nil, detail: String? = nil) {
        self.result = result
        self.reason = reason
        self.detail = detail
    }

    /// `newData` with no reason.
    public static let newData = WorkerOutcome(.newData)
    /// `noData` with no reason.
    public static let noData = WorkerOutcome(.noData)
    /// `failed` with an optional reason and detail.
    public static func failed(_ reason: ResultReason? = nil, detail: String? = nil) -> WorkerOutcome {
        WorkerOutcome(.failed, reason: reason, detail: detail)
    }
}
