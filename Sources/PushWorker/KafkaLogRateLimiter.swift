import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// Keeps librdkafka's repeated warnings and errors from flooding the log: of the messages of one kind (the
/// same facility and the same first ``prefixLength`` bytes of text, e.g. every "Offset commit (cgrp auto
/// commit timer) failed … Group rebalance in progress" of a rebalance, up to 5 a second at pushworker's
/// 200 ms `auto.commit.interval.ms`), at most one is logged per ``window``; the next one logged after the
/// window says how many were left out. Notices, info and debug messages pass unchanged.
final class KafkaLogRateLimiter: Sendable {
    /// How long a kind of message stays quiet after one of them is logged: 10 s.
    static let defaultWindow: Duration = .seconds(10)
    /// How many bytes of a message's text, with its facility, make its kind: 40.
    static let prefixLength = 40
    /// The most kinds remembered; beyond it the memory is cleared (a new window for every kind).
    static let maxKinds = 1024

    private struct Kind: Hashable {
        var facility: String
        var prefix: String
    }

    private struct Entry {
        var loggedAt: ContinuousClock.Instant
        var suppressed: Int
    }

    private let window: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let entries = Mutex<[Kind: Entry]>([:])

    /// Creates a limiter.
    /// - Parameters:
    ///   - window: how long a kind stays quiet after one of its messages is logged (default 10 s).
    ///   - now: the clock (tests pass their own).
    init(window: Duration = KafkaLogRateLimiter.defaultWindow, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.window = window
        self.now = now
    }

    /// Whether to log `message`, and how many of its kind were left out since the last one logged; `nil`
    /// to leave it out. Messages of severity 5 (notice) and above always pass, with 0.
    func admit(_ message: KafkaLogMessage) -> Int? {
        guard message.severity <= 4 else { return 0 }
        // A prefix cut inside a UTF-8 sequence decodes with U+FFFD: still the same key for the same text.
        let kind = Kind(facility: message.facility, prefix: String(decoding: message.message.utf8.prefix(Self.prefixLength), as: UTF8.self))
        let instant = now()
        return entries.withLock { entries -> Int? in
            if var entry = entries[kind] {
                guard entry.loggedAt.duration(to: instant) >= window else {
                    entry.suppressed += 1
                    entries[kind] = entry
                    return nil
                }
                entries[kind] = Entry(loggedAt: instant, suppressed: 0)
                return entry.suppressed
            }
            if entries.count >= Self.maxKinds { entries.removeAll(keepingCapacity: true) }
            entries[kind] = Entry(loggedAt: instant, suppressed: 0)
            return 0
        }
    }
}
