/// A Kafka record header: a name and an optional value (bytes).
public struct KafkaHeader: Hashable, Sendable {
    /// The header name, e.g. `apns-id`.
    public var name: String
    /// The header value bytes, or `nil` for a header with a null value.
    public var value: [UInt8]?

    /// Creates a header with raw bytes.
    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    /// Creates a header with a UTF-8 string value.
    public init(name: String, string: String) {
        self.name = name
        self.value = Array(string.utf8)
    }
}
