/// The headers of a Kafka record (``Job/headers``): ``RecordHeader`` values in record order, duplicates
/// kept, with lookup by name.
///
/// Kafka allows several headers of one name; the lookups by name (``subscript(_:)``, ``bytes(named:)``,
/// ``string(named:)``) read the **first** header of that name, as pushworker itself does for `apns-id`,
/// `apns-expiration` and `traceparent`; ``values(named:)`` reads them all. Names match exactly, byte for
/// byte in UTF-8 (case-sensitive, no Unicode normalization), as Kafka compares them.
///
/// Header names come from librdkafka as C strings: a name is read up to its first NUL byte, so a name from
/// a record never holds a NUL (see ``RecordHeader``); values are exact bytes.
///
/// Lookups scan the headers in order (a record has a handful); nothing is indexed or copied when a job is
/// built, so a worker that reads no header pays nothing for them.
///
/// ```swift
/// let headers: RecordHeaders = [RecordHeader(name: "apns-priority", string: "10"), RecordHeader(name: "x-raw", value: [0xFF])]
/// headers.string(named: "apns-priority")   // "10"
/// headers.bytes(named: "x-raw")            // [0xFF]
/// headers.string(named: "x-raw")           // nil: not UTF-8
/// ```
public struct RecordHeaders: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    @usableFromInline var headers: [RecordHeader]

    /// No headers.
    public init() { headers = [] }

    /// The headers `headers`, in their order (the array is kept as it is, not copied).
    public init(_ headers: [RecordHeader]) {
        self.headers = headers
    }

    /// The headers `headers`, in their order.
    public init(_ headers: some Sequence<RecordHeader>) {
        self.headers = Array(headers)
    }

    /// Headers from (name, value) pairs, in their order: the shape `Job.headers` had before this type.
    public init(_ pairs: [(name: String, value: [UInt8]?)]) {
        headers = pairs.map { RecordHeader(name: $0.name, value: $0.value) }
    }

    /// The headers of the literal, in its order.
    public init(arrayLiteral elements: RecordHeader...) {
        headers = elements
    }

    /// The position of the first header (0).
    @inlinable public var startIndex: Int { headers.startIndex }
    /// One past the position of the last header (the count).
    @inlinable public var endIndex: Int { headers.endIndex }

    /// The header at `position` (record order, from 0).
    @inlinable public subscript(position: Int) -> RecordHeader { headers[position] }

    /// The first header named `name`, or `nil` when there is none.
    @inlinable public subscript(_ name: String) -> RecordHeader? {
        for header in headers where Self.matches(header.name, name) { return header }
        return nil
    }

    /// Whether some header is named `name` (with a value or a null one).
    public func contains(_ name: String) -> Bool {
        self[name] != nil
    }

    /// The first header named `name`'s value bytes, or `nil` when there is none or its value is null (a
    /// later header of the same name is not consulted; read ``values(named:)``).
    public func bytes(named name: String) -> [UInt8]? {
        self[name]?.value
    }

    /// The first header named `name`'s value as UTF-8 text, or `nil` when there is none, its value is null,
    /// or its bytes are not valid UTF-8 (read ``bytes(named:)`` for them).
    public func string(named name: String) -> String? {
        self[name]?.string
    }

    /// The values of every header named `name`, in record order (`nil` for a null value); empty when there
    /// is none.
    public func values(named name: String) -> [[UInt8]?] {
        headers.filter { Self.matches($0.name, name) }.map(\.value)
    }

    /// Adds a header after the others.
    public mutating func append(_ header: RecordHeader) {
        headers.append(header)
    }

    /// Exact, byte-for-byte name comparison (`String`'s `==` would also match canonically equivalent
    /// spellings, e.g. U+212A KELVIN SIGN and `K`).
    @inlinable @inline(__always)
    static func matches(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }
}
