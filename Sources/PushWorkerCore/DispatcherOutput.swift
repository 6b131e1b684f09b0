/// What ``JobDispatcher`` hands to the service for each record it takes: a result, or a record to write to
/// the retry topic without a result yet.
public enum DispatcherOutput: Sendable {
    /// The result of one attempt of `input`. With `retry` set (the result's ``ResultRecord/willRetry`` is
    /// true), the record must also be written to the retry topic (``RetryRequest``): its input offset is done
    /// once both are delivered.
    case result(ResultRecord, InputRecord, retry: RetryRequest?)
    /// `input` gets no result now: it waits in the retry topic (``Forward``); its input offset is done once
    /// that copy is delivered. It gets its result when it runs.
    case forward(InputRecord, Forward)
}

/// The next attempt of a record whose attempt failed retryably.
public struct RetryRequest: Sendable, Hashable {
    /// The runs so far (the failed attempt's number): the copy carries it as `pushworker-attempts`, and runs
    /// as attempt `runs + 1`.
    public var runs: Int
    /// Not before this time (UNIX ms) does the next attempt run: the copy's `pushworker-not-before`.
    public var notBeforeMs: Int64
    /// The record's message id, carried in `pushworker-message-id` so that every attempt reports it.
    public var messageId: String
    /// Where the record was first read, carried in the `pushworker-source-*` headers.
    public var origin: RecordSource

    /// Creates a request.
    public init(runs: Int, notBeforeMs: Int64, messageId: String, origin: RecordSource) {
        self.runs = runs
        self.notBeforeMs = notBeforeMs
        self.messageId = messageId
        self.origin = origin
    }
}

/// A record the dispatcher sends through the retry topic without running it now.
public struct Forward: Sendable, Hashable {
    /// Why it goes through the retry topic.
    public enum Kind: String, Sendable, Hashable {
        /// A scheduled push (`pushworker-not-before`) due later than the dispatcher holds records in memory.
        case scheduled
        /// A record read from the retry topic, still not due and due later than the dispatcher holds
        /// records: written to the topic again.
        case requeued
        /// A record whose key has an earlier record waiting for its retry: it follows it through the retry
        /// topic, so that the key's records keep their order.
        case follower
    }

    /// Why.
    public var kind: Kind
    /// The runs so far (0 for a record that never ran): carried as `pushworker-attempts` when above 0.
    public var runs: Int
    /// The record's `pushworker-not-before` (UNIX ms), or `nil` when it may run as soon as it is read.
    public var notBeforeMs: Int64?
    /// The record's message id, carried in `pushworker-message-id`.
    public var messageId: String
    /// Where the record was first read, carried in the `pushworker-source-*` headers.
    public var origin: RecordSource

    /// Creates a forward.
    public init(kind: Kind, runs: Int, notBeforeMs: Int64?, messageId: String, origin: RecordSource) {
        self.kind = kind
        self.runs = runs
        self.notBeforeMs = notBeforeMs
        self.messageId = messageId
        self.origin = origin
    }
}

/// How the dispatcher retries and schedules: the retry topic (``retryTopic``), the default policy, and how
/// long and how many records it holds in memory.
public struct DelaySettings: Sendable, Hashable {
    /// The topic records wait in (retries, scheduled pushes, followers), or `nil`: then nothing is retried
    /// (every result has `willRetry` false) and scheduled pushes wait in memory, however far away.
    public var retryTopic: String?
    /// The policy of workers registered without one (``RegisteredWorker/retry``): default
    /// ``RetryPolicy/standard``.
    public var defaultPolicy: RetryPolicy
    /// Records due within this are held in memory until due; later ones go (again) to the retry topic.
    /// Default 15 s: a held record holds back its partition's committed offset (never its records), so a
    /// crash re-runs at most this long's worth of the records after it.
    public var maxHold: Duration
    /// The most records held in memory at once: default 10 000; beyond it records due later go to the
    /// retry topic even when due within ``maxHold``.
    public var maxHeld: Int
    /// How long a key stays parked on this member after its last record went to the retry topic, beyond
    /// the longest its retries can take: default 60 s (see docs/guarantees.md, "Retries and ordering").
    public var parkSlack: Duration

    /// Creates the settings.
    public init(retryTopic: String? = nil, defaultPolicy: RetryPolicy = .standard, maxHold: Duration = .seconds(15), maxHeld: Int = 10_000, parkSlack: Duration = .seconds(60)) {
        self.retryTopic = retryTopic
        self.defaultPolicy = defaultPolicy
        self.maxHold = max(.zero, maxHold)
        self.maxHeld = max(0, maxHeld)
        self.parkSlack = max(.zero, parkSlack)
    }
}
