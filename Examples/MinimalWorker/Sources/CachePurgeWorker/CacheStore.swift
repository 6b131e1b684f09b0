import Synchronization

/// An in-memory cache: values by key, safe from any task.
public final class CacheStore: Sendable {
    private let entries: Mutex<[String: [UInt8]]>

    /// Creates a cache holding `entries`.
    public init(_ entries: [String: [UInt8]] = [:]) {
        self.entries = Mutex(entries)
    }

    /// The keys held, sorted.
    public var keys: [String] { entries.withLock { $0.keys.sorted() } }

    /// Removes `keys`; returns how many were held.
    public func remove(_ keys: [String]) -> Int {
        entries.withLock { entries in keys.reduce(0) { count, key in count + (entries.removeValue(forKey: key) == nil ? 0 : 1) } }
    }
}
