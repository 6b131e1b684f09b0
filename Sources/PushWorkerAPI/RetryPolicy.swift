/// When and how often a `failed` job runs again: exponential backoff with jitter, per worker type.
///
/// A job is retried only when its outcome is marked retryable (``WorkerOutcome/retryable``, a thrown
/// ``RetryableError``, an exec program's exit status 75 or `retry` line, an http endpoint's 429 or 503 or
/// transport error), or when it ran out of its budget and ``retriesTimeouts`` is set. Attempt `n + 1`
/// waits ``delay(afterAttempt:random:)`` after attempt `n` failed: `initialDelay × multiplier^(n−1)`,
/// capped at ``maxDelay``, then spread by ``jitter``. After ``maxAttempts`` runs the last failure is final
/// (and goes to the dead-letter topic when one is configured).
///
/// The waiting happens in the retry topic (the service's `retries.topic`), so the record's partition and
/// other keys go on meanwhile; the record's later records of the same key wait behind it.
public struct RetryPolicy: Sendable, Hashable {
    /// The most runs of one record, the first included: default 3. 1 turns retries off.
    public var maxAttempts: Int
    /// The wait before the second run: default 1 s.
    public var initialDelay: Duration
    /// The factor each later wait grows by: default 2.
    public var multiplier: Double
    /// The longest wait between two runs: default 60 s.
    public var maxDelay: Duration
    /// How far a wait is spread at random, as a fraction of it: default 0.2 (a 10 s wait becomes 8–12 s), so
    /// that records that failed together do not all run again in the same instant. 0 … 1.
    public var jitter: Double
    /// Whether a `failed` / `timeout` (the worker outlived its budget) is retried too: default `false` (a job
    /// that ran out of time once is likely to again, and its side effects may have happened).
    public var retriesTimeouts: Bool

    /// The policy used for worker types that set none: 3 attempts, 1 s doubling to at most 60 s, jitter 0.2,
    /// timeouts not retried.
    public static let standard = RetryPolicy()

    /// No retries: every failure is final.
    public static let noRetries = RetryPolicy(maxAttempts: 1)

    /// Creates a policy; out-of-range values are clamped (``maxAttempts`` to 1 … 1 000 000, ``multiplier``
    /// to at least 1, ``jitter`` to 0 … 1, delays to at least 0 and ``maxDelay`` to at least
    /// ``initialDelay``).
    public init(
        maxAttempts: Int = 3, initialDelay: Duration = .seconds(1), multiplier: Double = 2,
        maxDelay: Duration = .seconds(60), jitter: Double = 0.2, retriesTimeouts: Bool = false
    ) {
        self.maxAttempts = min(max(1, maxAttempts), 1_000_000)
        self.initialDelay = max(.zero, initialDelay)
        self.multiplier = multiplier.isFinite ? max(1, multiplier) : 1
        self.maxDelay = max(self.initialDelay, maxDelay)
        self.jitter = jitter.isFinite ? min(max(0, jitter), 1) : 0
        self.retriesTimeouts = retriesTimeouts
    }

    /// Whether a record whose attempt `attempt` ended in `outcome` (`timedOut` when it outlived its budget)
    /// runs again: the outcome is `failed` and retryable (or a timeout with ``retriesTimeouts``), and
    /// `attempt` is below ``maxAttempts``.
    public func retries(_ outcome: WorkerOutcome, timedOut: Bool, attempt: Int) -> Bool {
        guard outcome.result == .failed, attempt < maxAttempts else { return false }
        return timedOut ? retriesTimeouts : outcome.retryable
    }

    /// The wait before the run after attempt `attempt` (1 for the first), in whole milliseconds:
    /// `initialDelay × multiplier^(attempt−1)` capped at ``maxDelay``, times `1 + jitter × (2 × random − 1)`
    /// (so `random` 0.5 gives the wait itself), and capped at ``maxDelay`` again.
    /// - Parameter random: a number in 0 ..< 1 (the service uses `Double.random(in: 0..<1)`).
    public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let initialMs = Double(initialDelay.wholeMilliseconds)
        let maxMs = Double(maxDelay.wholeMilliseconds)
        var ms = initialMs
        var step = 1
        while step < attempt && ms < maxMs {
            ms *= multiplier
            step += 1
        }
        ms = min(ms, maxMs)
        let spread = 1 + jitter * (2 * min(max(random, 0), 1) - 1)
        ms = min(max(0, ms * spread), maxMs)
        return .milliseconds(Int64(ms.rounded()))
    }

    /// The longest total wait of the runs after attempt `attempt`, without jitter spreading it above
    /// ``maxDelay``: how long a record's retries can go on at most, not counting the runs themselves.
    public func longestRemainingWait(afterAttempt attempt: Int) -> Duration {
        guard attempt < maxAttempts else { return .zero }
        var total = Duration.zero
        var next = attempt
        while next < maxAttempts && total < .seconds(86_400 * 365) {
            total += delay(afterAttempt: next, random: 1)
            next += 1
        }
        return total
    }
}
