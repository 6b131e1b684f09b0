/// The `apns-id` dedupe window of a ``JobDispatcher`` (configuration key `dedupe`): a record whose
/// `apns-id` repeats one taken within ``window`` gets `noData` / `duplicate` instead of running again.
///
/// What counts as a repeat: a record of attempt 1 (no `pushworker-attempts` header: redriven and retried
/// records are never deduped) that passed the checks (contract section 2, rows 1–5), with a non-empty
/// `apns-id`, taken by this dispatcher within ``window`` of the first record with that `apns-id`. A first
/// record whose run ends `failed` leaves the window, so a later repeat runs (a repeat taken while the first
/// still waits or runs is a duplicate). The window lives in memory only: a restart, or a rebalance that
/// moves a partition to another member, forgets it, so a repeat may run again there (at-least-once).
public struct DedupeConfiguration: Sendable, Equatable {
    /// The default window: 300 000 ms (5 minutes).
    public static let defaultWindow: Duration = .seconds(300)
    /// The default bound on remembered `apns-id`s: 100 000.
    public static let defaultMaxEntries = 100_000
    /// The largest window that takes effect: 2 147 483 647 ms (about 24.8 days), as the file accepts.
    public static let maxWindow: Duration = .milliseconds(2_147_483_647)
    /// The largest ``maxEntries`` that takes effect: 10 000 000 (about 2.5 GB of memory).
    public static let maxEntriesLimit = 10_000_000

    /// How long after the first record with an `apns-id` a repeat is a duplicate (file `dedupe.windowMs`,
    /// in milliseconds; default 300 000). Measured on the monotonic clock from when the first was taken.
    /// Takes effect clamped to 1 ms … ``maxWindow``, in whole milliseconds.
    public var window: Duration
    /// The most `apns-id`s remembered (file `dedupe.maxEntries`; default 100 000): when full, the oldest is
    /// forgotten first, even inside its window. Each costs about 250 bytes for a 36-byte `apns-id` (a UUID:
    /// the id's own array, a dictionary slot, a queue slot), plus its length beyond 36 bytes. Takes effect
    /// clamped to 1 … ``maxEntriesLimit``.
    public var maxEntries: Int

    /// Creates a dedupe configuration.
    /// - Parameters:
    ///   - window: how long repeats are duplicates (default 5 minutes).
    ///   - maxEntries: the most `apns-id`s remembered (default 100 000).
    public init(window: Duration = Self.defaultWindow, maxEntries: Int = Self.defaultMaxEntries) {
        self.window = window
        self.maxEntries = maxEntries
    }

    /// ``window`` in whole milliseconds as it takes effect: 1 … 2 147 483 647.
    public var effectiveWindowMs: Int64 {
        min(Self.maxWindow.wholeMilliseconds, max(1, window.wholeMilliseconds))
    }

    /// ``maxEntries`` as it takes effect: 1 … ``maxEntriesLimit``.
    public var effectiveMaxEntries: Int { min(Self.maxEntriesLimit, max(1, maxEntries)) }
}
