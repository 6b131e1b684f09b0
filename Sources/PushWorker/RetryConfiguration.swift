import PushWorkerCore

/// Retries and scheduled pushes (file `retries`): the retry topic records wait in, the default retry
/// policy, and how much the service holds in memory.
///
/// A `failed` result its worker marks retryable runs again after a backoff (``policy``; per worker type
/// with `workers.<type>.retry`); a record with a future `pushworker-not-before` header runs at that time.
/// Both wait in ``topic`` (never blocking their input partition or other keys); docs/guarantees.md,
/// "Retries and scheduled pushes", says what each costs.
public struct RetryConfiguration: Sendable, Equatable {
    /// Whether retries and the retry topic are on (file `enabled`): default `true`. Off, every result is
    /// final (`willRetry` false) and scheduled pushes wait in memory (holding back their partition's
    /// committed offset until they run).
    public var enabled = true
    /// The retry topic (file `topic`): default `push-retries`. The service consumes it beside the input
    /// topics and writes retries, scheduled pushes and records following a retry of their key to it, keyed
    /// as their input. Create it with as many partitions as the largest input topic.
    public var topic = "push-retries"
    /// The policy of worker types that set none (file keys `maxAttempts`, `initialDelayMs`, `multiplier`,
    /// `maxDelayMs`, `jitter`, `retryTimeouts`): default ``RetryPolicy/standard`` (3 attempts, 1 s doubling
    /// to 60 s, jitter 0.2, timeouts not retried).
    public var policy = RetryPolicy.standard
    /// Records due within this are held in memory until due (file `maxHoldMs`): default 15 s. A scheduled
    /// push due later goes to the retry topic and is read again until its time comes within it. A held
    /// record holds back its partition's committed offset, so a crash re-runs up to this long's worth of
    /// the records after it.
    public var maxHold: Duration = .seconds(15)
    /// The most records held in memory at once (file `maxHeld`): default 10 000.
    public var maxHeld = 10_000

    /// Creates the defaults.
    public init() {}

    /// The dispatcher's settings: the retry topic when ``enabled``, else none.
    var delaySettings: DelaySettings {
        DelaySettings(retryTopic: enabled ? topic : nil, defaultPolicy: policy, maxHold: maxHold, maxHeld: maxHeld)
    }
}

extension ServiceConfiguration {
    /// The keys of a retry policy in the file (`retries` and `workers.<type>.retry`).
    static let retryPolicyKeys: Set<String> = ["maxAttempts", "initialDelayMs", "multiplier", "maxDelayMs", "jitter", "retryTimeouts"]

    /// Reads a retry policy's keys from `section` over `base` (keys left out keep `base`'s values).
    /// - Throws: ``ConfigurationError`` naming the key.
    static func parseRetryPolicy(_ section: inout ConfigReader, over base: RetryPolicy) throws -> RetryPolicy {
        var policy = base
        if let value = try section.int("maxAttempts", min: 1, max: 1_000_000) { policy.maxAttempts = value }
        if let value = try section.int("initialDelayMs", min: 0, max: 2_147_483_647) { policy.initialDelay = .milliseconds(value) }
        if let value = try section.double("multiplier") {
            guard value >= 1, value <= 1000 else {
                throw ConfigurationError(.invalidValue, key: section.path + ".multiplier", "must be between 1 and 1000, got \(value)")
            }
            policy.multiplier = value
        }
        if let value = try section.int("maxDelayMs", min: 0, max: 2_147_483_647) { policy.maxDelay = .milliseconds(value) }
        if let value = try section.double("jitter") {
            guard value >= 0, value <= 1 else {
                throw ConfigurationError(.invalidValue, key: section.path + ".jitter", "must be between 0 and 1 (a fraction of each wait), got \(value)")
            }
            policy.jitter = value
        }
        if let value = try section.bool("retryTimeouts") { policy.retriesTimeouts = value }
        if policy.maxDelay < policy.initialDelay {
            throw ConfigurationError(.invalidValue, key: section.path + ".maxDelayMs", "(\(policy.maxDelay.wholeMilliseconds) ms) is shorter than initialDelayMs (\(policy.initialDelay.wholeMilliseconds) ms)")
        }
        return RetryPolicy(maxAttempts: policy.maxAttempts, initialDelay: policy.initialDelay, multiplier: policy.multiplier,
                           maxDelay: policy.maxDelay, jitter: policy.jitter, retriesTimeouts: policy.retriesTimeouts)
    }
}
