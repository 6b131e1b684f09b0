/// Why a record got its result: pushworker's own reasons (contract section 2) or a worker-defined string.
public struct ResultReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The reason as written in the result's `reason` field.
    public var rawValue: String
    /// A reason from its `reason` text (`RawRepresentable`).
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A worker-defined reason, e.g. `ResultReason("unchanged")`.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// A reason from a string literal: `.failed("unchanged")`.
    public init(stringLiteral value: String) { self.rawValue = value }
    /// The reason's text, as in the result.
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
    /// A newer record with the same key and `apns-collapse-id` arrived while this one waited (result
    /// `noData`): only the newest of them runs, as APNs delivers only the newest notification of a collapse id.
    public static let collapsed = ResultReason("collapsed")
    /// The record repeats the `apns-id` of a record taken earlier within the dedupe window (result
    /// `noData`): that notification runs once.
    public static let duplicate = ResultReason("duplicate")
    /// A pushworker process died while the record ran, as many times as the crash guard's limit (result
    /// `failed`, not retried): the record is not run again and its partition moves past it.
    public static let workerCrashed = ResultReason("workerCrashed")
}
