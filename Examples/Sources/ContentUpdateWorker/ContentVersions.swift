import Synchronization

/// The version of each content item this process last fetched: its `ETag`, else its `Last-Modified`, else
/// a digest of its bytes. Used to send conditional requests and to tell "unchanged" from new content.
///
/// In memory, per process: after a restart, or on another replica, the first fetch of an item counts as
/// `newData` (the safe direction for a cache refresh). At most `capacity` items are kept; beyond it an
/// arbitrary item is forgotten, with the same effect.
public final class ContentVersions: Sendable {
    /// A fetched item's version.
    public struct Version: Sendable, Equatable {
        /// The `ETag` header, if the server sent one (sent back as `If-None-Match`).
        public var etag: String?
        /// The `Last-Modified` header, if the server sent one (sent back as `If-Modified-Since`).
        public var lastModified: String?
        /// A digest of the body (process-local `Hasher`, compared only within this process).
        public var digest: Int

        /// Creates a version.
        public init(etag: String?, lastModified: String?, digest: Int) {
            self.etag = etag
            self.lastModified = lastModified
            self.digest = digest
        }
    }

    private let items = Mutex<[String: Version]>([:])
    private let capacity: Int

    /// Creates an empty store.
    /// - Parameter capacity: the most items remembered (default 100 000).
    public init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
    }

    /// The version last recorded for `contentId`, if any.
    public func version(of contentId: String) -> Version? {
        items.withLock { $0[contentId] }
    }

    /// Records `version` for `contentId`.
    public func record(_ version: Version, for contentId: String) {
        items.withLock { items in
            if items[contentId] == nil, items.count >= capacity, let any = items.keys.first {
                items[any] = nil
            }
            items[contentId] = version
        }
    }
}
