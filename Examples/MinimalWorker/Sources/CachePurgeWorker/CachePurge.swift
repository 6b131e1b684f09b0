/// The payload of a `cache-purge` push: `{"aps":{"content-available":1},"type":"cache-purge","keys":["a","b"]}`.
public struct CachePurge: Decodable, Sendable {
    /// The cache keys to drop.
    public var keys: [String]
}
