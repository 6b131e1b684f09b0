/// The outcome of a job, named after iOS's `UIBackgroundFetchResult`.
public enum BackgroundFetchResult: String, Sendable, Hashable, CaseIterable, Codable {
    /// New data was fetched or work was done.
    case newData
    /// There was nothing to do.
    case noData
    /// The job failed.
    case failed
}

/// Why a record got its result: pushworker's own reasons (contract section 2) or a worker-defined string.
public struct ResultReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The reason as written in the result's `reason` field.
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A worker-defined reason, e.g. `ResultReason("unchanged")`.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// The value is not a JSON object in valid UTF-8 (empty and null values included).
    public static let invalidPayload = ResultReason("invalidPayload")
    /// The value is larger than the payload limit (default 4096 bytes, APNs's background-push limit).
    public static let payloadTooLarge = ResultReason("payloadTooLarge")
    /// `aps.content-available` is not the integer 1: not a background (silent) push.
    public static let notSilent = ResultReason("notSilent")
    /// `apns-expiration` was non-zero and already past when the record was taken.
    public static let expired = ResultReason("expired")
    /// `type` missing, not a string or not registered, and no default worker.
    public static let noWorker = ResultReason("noWorker")
    /// The worker threw an error (or an exec worker exited non-zero, an http worker got a non-2xx status).
    public static let workerError = ResultReason("workerError")
    /// The worker outlived its budget.
    public static let timeout = ResultReason("timeout")
}

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
