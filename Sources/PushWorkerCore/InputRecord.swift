/// One input record as the core sees it, with no Kafka types: a source, an optional key, the value bytes
/// and the headers.
public struct InputRecord: Sendable {
    /// Where it came from.
    public var source: RecordSource
    /// The ordering key bytes, or `nil`.
    public var key: [UInt8]?
    /// The value bytes, or `nil` for a null-value record.
    public var value: [UInt8]?
    /// The headers in record order, duplicates kept; a header with a null value has `nil` (the same value
    /// becomes the job's ``Job/headers``, not copied).
    public var headers: RecordHeaders
    /// When the record was taken from the topic, in milliseconds since the UNIX epoch.
    public var receivedAtMs: Int64

    /// Creates an input record.
    public init(source: RecordSource, key: [UInt8]? = nil, value: [UInt8]?, headers: RecordHeaders = [], receivedAtMs: Int64) {
        self.source = source
        self.key = key
        self.value = value
        self.headers = headers
        self.receivedAtMs = receivedAtMs
    }

    /// Creates an input record with headers given as (name, value) pairs, the shape `headers` had before
    /// ``RecordHeaders`` (so `headers: [("apns-id", Array("m-1".utf8))]` keeps compiling).
    public init(source: RecordSource, key: [UInt8]? = nil, value: [UInt8]?, headers: [(name: String, value: [UInt8]?)], receivedAtMs: Int64) {
        self.init(source: source, key: key, value: value, headers: RecordHeaders(headers), receivedAtMs: receivedAtMs)
    }

    /// The first header named `name` as a UTF-8 string, or `nil` if absent, null or not UTF-8 (the same as
    /// `headers.string(named: name)`).
    public func header(_ name: String) -> String? {
        headers.string(named: name)
    }
}
