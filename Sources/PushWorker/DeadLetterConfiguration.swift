import PushWorkerCore

/// The dead-letter topic (configuration key `deadLetter`): where pushworker copies the input record of a
/// `failed` result, byte for byte, with headers that say why, so that it can be inspected and redriven
/// (`pushworker redrive`) once the cause is fixed. Off unless a topic is set.
///
/// A record with a dead letter is committed only once both its result and its dead letter are
/// acknowledged by the broker (contract section 4: nothing is lost).
public struct DeadLetterConfiguration: Sendable, Equatable {
    /// The dead-letter topic (`deadLetter.topic`, env `PUSHWORKER_DEAD_LETTER_TOPIC`). It must differ from
    /// the input and results topics.
    public var topic: String
    /// The reasons of `failed` results whose records are dead-lettered (`deadLetter.reasons`), e.g.
    /// `["workerError", "timeout"]`, or `nil` (the default) for every `failed` result. Worker-defined
    /// reasons may be listed. `noData` and `newData` results are never dead-lettered.
    public var reasons: [String]?

    /// Creates a configuration.
    /// - Parameters:
    ///   - topic: the dead-letter topic.
    ///   - reasons: the `failed` reasons to dead-letter, or `nil` for all (default).
    public init(topic: String, reasons: [String]? = nil) {
        self.topic = topic
        self.reasons = reasons
    }

    /// Whether the input record of `result` goes to the dead-letter topic: a `failed` result whose reason
    /// is listed in ``reasons`` (any reason when `nil`).
    public func accepts(_ result: ResultRecord) -> Bool {
        guard result.result == .failed else { return false }
        guard let reasons else { return true }
        guard let reason = result.reason?.rawValue else { return false }
        return reasons.contains(reason)
    }
}
