/// A configuration that cannot be used, naming the key at fault.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    /// The kind of a ``ConfigurationError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file could not be read.
        public static let unreadable = Code("unreadable")
        /// The file is not valid JSON5.
        public static let syntax = Code("syntax")
        /// A key is not known.
        public static let unknownKey = Code("unknownKey")
        /// A value has the wrong type or is out of range.
        public static let invalidValue = Code("invalidValue")
        /// librdkafka refused a property.
        public static let kafkaProperty = Code("kafkaProperty")
    }

    /// The kind of failure.
    public var code: Code
    /// The key path at fault, e.g. `workers.ping.delayMs` (for a syntax error: of the member being read
    /// where the error is), or `nil` for the whole file.
    public var key: String?
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, key: String?, _ message: String) {
        self.code = code
        self.key = key
        self.message = message
    }

    /// `config key 'KEY': MESSAGE`, or the message alone for the whole file and for syntax errors (whose
    /// message gives the line, column and key path itself).
    public var description: String {
        if let key, code != .syntax { return "config key '\(key)': \(message)" }
        return message
    }
}
