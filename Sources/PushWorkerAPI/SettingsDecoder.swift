import Foundation

/// The strict `Decoder` of worker settings over a ``JSONValue``: unlike Foundation's `JSONDecoder`, a key the
/// type does not read is refused with its path, and so are missing keys and values of the wrong type.
///
/// Rules beyond `Decodable`'s own (documented for users in docs/workers.md):
/// - `URL`: a string that parses as an absolute URL (with a scheme).
/// - `Duration`: an integer number of milliseconds, at least 0 (`timeout: 2500` is 2.5 s).
/// - integers: JSON integers in the type's range (a number like `3.0` counts as `3`); floating point: any number.
/// - `null` reads as a missing value: `nil` for an optional, refused for a required key.
/// - objects decoded as dictionaries (`[String: T]`) take any keys.
struct SettingsDecoder: Decoder {
    /// The value, or `nil` for an absent key (only decoded so while probing).
    let value: JSONValue?
    let codingPath: [any CodingKey]
    let session: SettingsDecodingSession
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Decodes `type` from `value` (a section at `root`, e.g. `workerSettings.content-update`).
    ///
    /// A key misspelt in the file usually shows first as a missing key (`baseURL`) of the type: when the
    /// decode fails, a second, probing pass reads every key the type declares, and if the file then has a key
    /// the type does not read, that unknown key is reported instead, with the keys the type knows.
    /// - Throws: ``WorkerSettingsError`` naming the first bad key by its full path.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, root: String) throws(WorkerSettingsError) -> T {
        let session = SettingsDecodingSession(root: root, probing: false)
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try SettingsDecoder(value: value, codingPath: [], session: session).decode(type))
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let settings):
            if let unknown = session.firstUnknownKey() { throw unknown }
            return settings
        case .failure(let error):
            let probe = SettingsDecodingSession(root: root, probing: true)
            if (try? SettingsDecoder(value: value, codingPath: [], session: probe).decode(type)) != nil, let unknown = probe.firstUnknownKey() {
                throw unknown
            }
            throw session.settingsError(error)
        }
    }

    /// The deepest value decoded: 100 levels below the section. Settings never nest so deep; the bound keeps
    /// a recursive type from recursing without end while probing (where absent keys decode as empty objects).
    static let maxDepth = 100

    /// Decodes `type` here: `URL` and `Duration` by the settings' rules, anything else by its `init(from:)`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard codingPath.count <= Self.maxDepth else {
            throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "is nested more than \(Self.maxDepth) levels deep")
        }
        session.decoding(type, at: codingPath)
        if type == URL.self, let url = try url() as? T { return url }
        if type == Duration.self, let duration = try duration() as? T { return duration }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        var members: [String: JSONValue] = [:]
        if case .object(let object) = value {
            members = object
        } else if !session.probing {
            throw session.mismatch(value, expected: "an object", at: codingPath)
        }
        session.opened(codingPath, keys: members.keys)
        return KeyedDecodingContainer(SettingsKeyedContainer<Key>(members: members, codingPath: codingPath, session: session))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        var elements: [JSONValue] = []
        if case .array(let array) = value {
            elements = array
        } else if !session.probing {
            throw session.mismatch(value, expected: "a list", at: codingPath)
        }
        return SettingsUnkeyedContainer(elements: elements, codingPath: codingPath, session: session)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SettingsSingleValueContainer(decoder: self)
    }

    // MARK: Values

    var isNull: Bool { value == nil || value == .null }

    func string() throws -> String {
        if case .string(let text) = value { return text }
        if session.probing { return "" }
        throw session.mismatch(value, expected: "a string", at: codingPath)
    }

    func bool() throws -> Bool {
        if case .bool(let flag) = value { return flag }
        if session.probing { return false }
        throw session.mismatch(value, expected: "true or false", at: codingPath)
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let exact: I?
        switch value {
        case .int(let number): exact = I(exactly: number)
        case .double(let number) where number.rounded() == number: exact = I(exactly: number)
        default:
            if session.probing { return 0 }
            throw session.mismatch(value, expected: "an integer", at: codingPath)
        }
        if let exact { return exact }
        if session.probing { return 0 }
        throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "must be an integer from \(I.min) to \(I.max), got \(Self.text(value))")
    }

    func floatingPoint<F: BinaryFloatingPoint>(_ type: F.Type) throws -> F {
        let number: F
        switch value {
        case .int(let integer): number = F(integer)
        case .double(let double): number = F(double)
        default:
            if session.probing { return 0 }
            throw session.mismatch(value, expected: "a number", at: codingPath)
        }
        if number.isFinite || session.probing { return number.isFinite ? number : 0 }
        throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "is out of the range of \(F.self), got \(Self.text(value))")
    }

    /// An absolute URL (with a scheme).
    func url() throws -> URL {
        let text = try string()
        if let url = URL(string: text), url.scheme != nil { return url }
        // A placeholder most checks of a type's own accept (http(s) with a host).
        if session.probing { return URL(string: "https://placeholder.invalid/") ?? URL(fileURLWithPath: "/") }
        throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "must be an absolute URL with a scheme (e.g. https://cdn.example.com/content), got '\(text)'")
    }

    /// A duration given as an integer number of milliseconds, at least 0.
    func duration() throws -> Duration {
        guard case .int(let milliseconds) = value, milliseconds >= 0 else {
            if session.probing { return .zero }
            if case .int = value {
                throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "must be a duration in milliseconds of at least 0, got \(Self.text(value))")
            }
            throw session.mismatch(value, expected: "a duration in milliseconds (an integer)", at: codingPath)
        }
        return .milliseconds(milliseconds)
    }

    /// A value as it appears in messages: a short JSON text.
    static func text(_ value: JSONValue?) -> String {
        guard let value else { return "nothing" }
        let text = value.jsonText()
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}

extension SettingsDecodingSession {
    /// Any error of a decode as a ``WorkerSettingsError``: `DecodingError`s a type's own `init(from:)` threw
    /// keep their path; any other error is an invalid value of the section.
    func settingsError(_ error: any Error) -> WorkerSettingsError {
        if let error = error as? WorkerSettingsError { return error }
        guard let error = error as? DecodingError else {
            return WorkerSettingsError(.invalidValue, key: root, "\(error)")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return WorkerSettingsError(.missingKey, key: path(context.codingPath, key), "is missing")
        case .valueNotFound(let type, let context):
            return WorkerSettingsError(.missingKey, key: path(context.codingPath), "is null; \(Self.name(of: type)) is required")
        case .typeMismatch(let type, let context):
            return WorkerSettingsError(.typeMismatch, key: path(context.codingPath), "must be \(Self.name(of: type)): \(context.debugDescription)")
        case .dataCorrupted(let context):
            return WorkerSettingsError(.invalidValue, key: path(context.codingPath), context.debugDescription)
        @unknown default:
            return WorkerSettingsError(.invalidValue, key: root, "\(error)")
        }
    }
}
