import Synchronization

/// The heartbeat of a dedicated thread, for liveness checks: the thread calls ``beat()`` on each round and
/// ``end()`` when it finishes; any thread reads ``sinceLastBeat``.
///
/// A new heartbeat counts as beaten when it is created, so a thread not started yet reads as just beaten.
public final class Heartbeat: Sendable {
    /// The last beat (``WallClock/monotonicNs()``), 0 once ended.
    private let lastBeatNs = Atomic<Int64>(WallClock.monotonicNs())

    /// Creates a heartbeat, beaten now.
    public init() {}

    /// Records a round of the thread now.
    @inline(__always)
    public func beat() { lastBeatNs.store(WallClock.monotonicNs(), ordering: .relaxed) }

    /// Marks the thread as finished: ``sinceLastBeat`` is `nil` from now on (until the next ``beat()``).
    public func end() { lastBeatNs.store(0, ordering: .relaxed) }

    /// How long ago the last beat was (the creation counts as one), or `nil` once ended.
    public var sinceLastBeat: Duration? {
        let last = lastBeatNs.load(ordering: .relaxed)
        guard last != 0 else { return nil }
        return .nanoseconds(max(0, WallClock.monotonicNs() - last))
    }
}
