import Foundation

/// The sections of the config file's `workerSettings` object: one object per section, by section name
/// (by convention the worker's payload `type`), holding the settings of Swift workers.
///
/// ```json5
/// workerSettings: {
///   "content-update": { baseURL: "https://cdn.example.com/content", directory: "/var/lib/content" },
/// }
/// ```
/// A worker reads its section as a `Decodable` type with ``decode(_:section:)`` (or through
/// ``WorkerRegistry/settings(_:section:)``, which notes the section as read: a section no registered worker
/// reads is refused at startup). Decoding is strict, as the rest of the file is read: a key the type does
/// not read, a missing key and a value of the wrong type are refused with the key's path. Beyond
/// `Decodable`'s own rules, a `URL` is a string holding an absolute URL, and a `Duration` is an integer
/// number of milliseconds.
public struct WorkerSettings: Sendable, Equatable {
    /// The config file's key: `workerSettings`.
    public static let configKey = "workerSettings"

    /// The sections by name; each is a JSON object.
    public private(set) var sections: [String: JSONValue]

    /// Creates empty settings: no sections.
    public init() {
        sections = [:]
    }

    /// Creates the settings from sections.
    /// - Throws: ``WorkerSettingsError`` (`typeMismatch`) when a section is not a JSON object.
    public init(_ sections: [String: JSONValue]) throws(WorkerSettingsError) {
        for (name, value) in sections.sorted(by: { $0.key < $1.key }) {
            guard case .object = value else {
                throw WorkerSettingsError(.typeMismatch, key: Self.path(name), "must be an object (the settings of a worker), got \(SettingsDecodingSession.describe(value))")
            }
        }
        self.sections = sections
    }

    /// Creates the settings from the JSON5 text of a `workerSettings` object, e.g.
    /// `{ "content-update": { baseURL: "https://cdn.example.com/content" } }` (for tests; the service reads
    /// the config file).
    /// - Throws: ``WorkerSettingsError``: `syntax` when the text is not JSON5 or not an object,
    ///   `typeMismatch` when a section is not an object.
    public init(json5 text: String) throws(WorkerSettingsError) {
        let value = try Self.parseJSON5(text, key: Self.configKey)
        guard case .object(let sections) = value else {
            throw WorkerSettingsError(.syntax, key: Self.configKey, "must be an object of sections, got \(SettingsDecodingSession.describe(value))")
        }
        try self.init(sections)
    }

    /// Parses JSON5 text (a Swift string, so valid UTF-8) into a value.
    /// - Throws: ``WorkerSettingsError`` `syntax` naming `key` when the text is not JSON5.
    package static func parseJSON5(_ text: String, key: String) throws(WorkerSettingsError) -> JSONValue {
        // Checked first: Foundation's decoder traps on some invalid numbers (``JSON5SyntaxLocator``).
        if let problem = JSON5SyntaxLocator.locate(text) {
            throw WorkerSettingsError(.syntax, key: key, "is not valid JSON5: \(problem)")
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            // A trailing line feed (JSON5 whitespace): Foundation's JSON5 scanner reads one byte past a
            // number that ends the buffer.
            return try decoder.decode(JSONValue.self, from: Data(text.utf8) + [0x0A])
        } catch {
            throw WorkerSettingsError(.syntax, key: key, "is not valid JSON5: \(error)")
        }
    }

    /// The section names, sorted.
    public var sectionNames: [String] { sections.keys.sorted() }

    /// The path of a section in the config file: `workerSettings.<section>`.
    public static func path(_ section: String) -> String { "\(configKey).\(section)" }

    /// Decodes the section named `section` as `type`. A missing section reads as an empty object, so a
    /// settings type whose keys are all optional needs no section.
    /// - Throws: ``WorkerSettingsError`` naming the first bad key by its full path, e.g.
    ///   `workerSettings.content-update.baseUrl is not a setting of ContentUpdateWorker.Settings; known:
    ///   baseURL, directory` (`unknownKey`), `missingKey`, `typeMismatch` or `invalidValue`.
    public func decode<T: Decodable>(_ type: T.Type, section: String) throws(WorkerSettingsError) -> T {
        try SettingsDecoder.decode(type, from: sections[section] ?? .object([:]), root: Self.path(section))
    }
}
