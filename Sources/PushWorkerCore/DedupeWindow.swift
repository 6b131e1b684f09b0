/// The `apns-id`s taken within the dedupe window, with the first record of each (``DedupeConfiguration``).
///
/// Bounded: at most `maxEntries` ids; the oldest goes first when full, and ids older than the window go as
/// soon as anything is admitted. Insertion order is expiry order (one window for all), so both are a pop
/// from the front of one FIFO queue: O(1) amortized per record. Times are monotonic milliseconds given by
/// the caller. Not thread-safe: the dispatcher keeps it inside its lock.
struct DedupeWindow {
    private struct Entry {
        var first: RecordSource
        var expiresAtMs: Int64
        /// Tells this entry from an earlier one of the same id in ``order`` (forgotten, then admitted again).
        var serial: UInt64
    }

    private var entries: [[UInt8]: Entry] = [:]
    /// Ids in admission order; an item whose serial no longer matches its entry is stale (forgotten).
    private var order = FIFOQueue<(id: [UInt8], serial: UInt64)>()
    private var nextSerial: UInt64 = 0
    let windowMs: Int64
    let maxEntries: Int

    init(_ configuration: DedupeConfiguration) {
        windowMs = configuration.effectiveWindowMs
        maxEntries = configuration.effectiveMaxEntries
    }

    /// Ids remembered now.
    var count: Int { entries.count }
    /// Items in the admission queue, stale ones included (at most about twice ``count``).
    var queuedCount: Int { order.count }

    /// Admits the `apns-id` `id` of the record at `source`, taken at `nowMs`: returns the source of the first
    /// record with that id if it is still in the window (a repeat), else remembers `source` as the first and
    /// returns `nil`. The first record itself read again (after a rebalance brought its partition back, or a
    /// shutdown took it back unstarted) is not a repeat of itself.
    mutating func admit(_ id: [UInt8], source: RecordSource, nowMs: Int64) -> RecordSource? {
        expire(nowMs: nowMs)
        if let entry = entries[id] {
            return entry.first == source ? nil : entry.first
        }
        nextSerial += 1
        entries[id] = Entry(first: source, expiresAtMs: nowMs &+ windowMs, serial: nextSerial)
        order.append((id, nextSerial))
        while entries.count > maxEntries, let oldest = order.popFirst() {
            if entries[oldest.id]?.serial == oldest.serial { entries[oldest.id] = nil }
        }
        // Forgotten ids leave stale items behind: drop them once they outnumber the live ones.
        if order.count > 2 * entries.count + 64 {
            _ = order.removeAll { [entries] item in entries[item.id]?.serial != item.serial }
        }
        return nil
    }

    /// Forgets `id` if its first record is `source` (that record's run failed: a later repeat runs).
    mutating func forget(_ id: [UInt8], ifFirstIs source: RecordSource) {
        if entries[id]?.first == source { entries[id] = nil }
    }

    /// Drops the ids whose window has ended at `nowMs`.
    mutating func expire(nowMs: Int64) {
        while let front = order.first {
            if let entry = entries[front.id], entry.serial == front.serial {
                guard entry.expiresAtMs <= nowMs else { return }
                entries[front.id] = nil
            }
            _ = order.popFirst()
        }
    }
}
