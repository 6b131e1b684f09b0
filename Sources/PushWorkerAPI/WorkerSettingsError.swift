/// Worker settings that cannot be decoded, naming the key at fault by its full path in the config file,
/// e.g. `workerSettings.content-update.baseUrl`.
///
/// Thrown by ``WorkerSettings/decode(_:section:)`` and ``WorkerRegistry/settings(_:section:)``; the command
/// line reports it as an invalid configuration (exit status 1) naming the key.
public struct WorkerSettingsError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of a ``WorkerSettingsError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file has a key the settings type does not read (often a misspelt one).
        public static let unknownKey = Code("unknownKey")
        /// A key the settings type requires is not in the file (or is `null`).
        public static let missingKey = Code("missingKey")
        /// A value has the wrong JSON type (a string where a number is read, …).
        public static let typeMismatch = Code("typeMismatch")
        /// A value has the right JSON type but cannot be used: an integer out of range, a URL without a
        /// scheme, a negative duration, or what the type's own `init(from:)` refused.
        public static let invalidValue = Code("invalidValue")
        /// The JSON5 text of ``WorkerSettings/init(json5:)`` does not parse.
        public static let syntax = Code("syntax")
        /// The settings decoded, but the worker's `init(settings:)` refused them
        /// (``WorkerRegistry/register(_:type:section:name:budget:maxConcurrent:)``); the message is its error.
        public static let refusedByWorker = Code("refusedByWorker")
    }

    /// The kind of failure.
    public var code: Code
    /// The full key path at fault, e.g. `workerSettings.content-update.retry.delays[2]`.
    public var key: String
    /// What is wrong (and, for an unknown key, the keys the type does read).
    public var message: String

    /// Creates an error.
    public init(_ code: Code, key: String, _ message: String) {
        self.code = code
        self.key = key
        self.message = message
    }

    /// `config key 'workerSettings.content-update.baseUrl': is not a setting of …`, as
    /// `ConfigurationError` describes keys of the rest of the file.
    public var description: String { "config key '\(key)': \(message)" }
}
