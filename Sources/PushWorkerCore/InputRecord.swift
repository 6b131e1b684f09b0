/// One input record as the core sees it, with no Kafka types: a source, an optional key, the value bytes
/// and the headers.
public struct InputRecord: Sendable {
    /// Where it came from.
    public var source: RecordSource
    /// The ordering key bytes, or `nil`.
    public var key: [UInt8]?
    /// The value bytes, or `nil` for a null-value record.
    public var value: [UInt8]?
    /// The headers as (name, value) pairs in record order; a header without a value has `nil`.
    public var headers: [(name: String, value: [UInt8]?)]
    /// When the record was taken from the topic, in milliseconds since the UNIX epoch.
    public var receivedAtMs: Int64

    /// Creates an input record.
    public init(source: RecordSource, key: [UInt8]? = nil, value: [UInt8]?, headers: [(name: String, value: [UInt8]?)] = [], receivedAtMs: Int64) {
        self.source = source
        self.key = key
        self.value = value
        self.headers = headers
        self.receivedAtMs = receivedAtMs
    }

    /// The first header named `name` as a UTF-8 string, or `nil` if absent or not UTF-8.
    public func header(_ name: String) -> String? {
        for header in headers where header.name == name {
            guard let value = header.value else { return nil }
            return String(validating: value, as: UTF8.self)
        }
        return nil
    }
}
