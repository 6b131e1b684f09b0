/// One Kafka record header as a worker sees it: a name and its value's exact bytes (an element of
/// ``RecordHeaders``).
///
/// The name comes from librdkafka (`rd_kafka_header_get_all`) as a C string, which has no length: it is
/// read up to its first NUL byte (a name from a record cannot hold a NUL), and bytes that are not UTF-8 are
/// read as U+FFFD. The value carries its length and is exact: any bytes, NUL and non-UTF-8 bytes included,
/// or `nil` for a header with a null value (Kafka tells a null value from an empty one).
public struct RecordHeader: Sendable, Hashable {
    /// The header name, e.g. `apns-id`. Kafka header names are case-sensitive.
    public var name: String
    /// The value's bytes, exactly as the record has them, or `nil` for a null value.
    public var value: [UInt8]?

    /// Creates a header with raw value bytes (`nil`: a null value).
    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    /// Creates a header whose value is `string`'s UTF-8 bytes.
    public init(name: String, string: String) {
        self.name = name
        self.value = Array(string.utf8)
    }

    /// The value as UTF-8 text, or `nil` when the value is null or its bytes are not valid UTF-8 (read
    /// ``value`` for the bytes). Decoded on each use; a NUL byte is kept (`\u{0}`), never cuts the text.
    public var string: String? {
        value.flatMap { String(validating: $0, as: UTF8.self) }
    }
}
