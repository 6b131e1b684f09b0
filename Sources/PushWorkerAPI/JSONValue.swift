/// A JSON value, as a worker receives the payload's keys (``Job/object``).
///
/// Numbers without a fraction that fit in 64 bits are ``int(_:)``; other numbers are ``double(_:)``.
public enum JSONValue: Sendable, Hashable, Codable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without a fraction that fits in `Int64`.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Decodes any JSON value (`Decodable`); an integral number that fits in `Int64` becomes ``int(_:)``.
    /// - Throws: `DecodingError` when the decoder holds no JSON value.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it stands for (`Encodable`).
    /// - Throws: whatever the encoder throws (e.g. for a non-finite ``double(_:)``).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    /// The integer, if this is an integer.
    public var intValue: Int64? { if case .int(let value) = self { value } else { nil } }
    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
    /// The Boolean, if this is a Boolean.
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
    /// The object's members, if this is an object.
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    /// The member named `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }
}
