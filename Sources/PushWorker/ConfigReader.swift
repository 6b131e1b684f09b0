import Foundation
import PushWorkerCore
import PushWorkerKafka

/// Reads one JSON object of the configuration, remembering which keys were used so that unknown keys
/// (typos) are refused by ``finish()``.
struct ConfigReader {
    let path: String
    private let members: [String: JSONValue]
    private var used: Set<String> = []

    init(_ value: JSONValue, path: String) throws {
        guard case .object(let members) = value else {
            throw ConfigurationError(.invalidValue, key: path.isEmpty ? nil : path, path.isEmpty ? "the config file must hold a JSON object" : "must be an object")
        }
        self.members = members
        self.path = path
    }

    var keys: [String] { members.keys.sorted() }

    private func key(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    private mutating func value(_ name: String) -> JSONValue? {
        used.insert(name)
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    mutating func string(_ name: String) throws -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value else { throw ConfigurationError(.invalidValue, key: key(name), "must be a string") }
        return text
    }

    /// An integer from `min` to `max`; without `max`, up to `Int32.max`.
    mutating func int(_ name: String, min: Int, max: Int? = nil) throws -> Int? {
        guard let value = value(name) else { return nil }
        guard case .int(let number) = value, number >= min, number <= max ?? Int(Int32.max) else {
            throw ConfigurationError(.invalidValue, key: key(name),
                max.map { "must be an integer from \(min) to \($0)" } ?? "must be an integer of at least \(min)")
        }
        return Int(number)
    }

    /// A finite number (an integer or a decimal fraction).
    mutating func double(_ name: String) throws -> Double? {
        guard let value = value(name) else { return nil }
        switch value {
        case .int(let number): return Double(number)
        case .double(let number) where number.isFinite: return number
        default: throw ConfigurationError(.invalidValue, key: key(name), "must be a number")
        }
    }

    mutating func bool(_ name: String) throws -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw ConfigurationError(.invalidValue, key: key(name), "must be true or false") }
        return flag
    }

    mutating func stringList(_ name: String) throws -> [String]? {
        guard let value = value(name) else { return nil }
        if case .array(let items) = value {
            return try items.map {
                guard case .string(let text) = $0 else { throw ConfigurationError(.invalidValue, key: key(name), "must be a list of strings") }
                return text
            }
        }
        throw ConfigurationError(.invalidValue, key: key(name), "must be a list of strings")
    }

    mutating func stringMap(_ name: String) throws -> [String: String]? {
        guard let value = value(name) else { return nil }
        guard case .object(let members) = value else { throw ConfigurationError(.invalidValue, key: key(name), "must be an object of strings") }
        return try members.mapValues {
            guard case .string(let text) = $0 else { throw ConfigurationError(.invalidValue, key: key(name), "must be an object of strings") }
            return text
        }
    }

    /// librdkafka properties: values may be strings, numbers or Booleans and are passed on as text.
    mutating func properties(_ name: String) throws -> KafkaConfiguration? {
        guard let value = value(name) else { return nil }
        guard case .object(let members) = value else { throw ConfigurationError(.invalidValue, key: key(name), "must be an object of librdkafka properties") }
        var configuration = KafkaConfiguration()
        for (property, item) in members.sorted(by: { $0.key < $1.key }) {
            switch item {
            case .string(let text): configuration[property] = text
            case .int(let number): configuration[property] = String(number)
            case .double(let number): configuration[property] = String(number)
            case .bool(let flag): configuration[property] = flag ? "true" : "false"
            default: throw ConfigurationError(.invalidValue, key: "\(key(name)).\(property)", "a librdkafka property must be a string, number or Boolean")
            }
        }
        return configuration
    }

    /// The value of `name` as it is (`nil` when missing or `null`), for sections read by code of their own.
    mutating func json(_ name: String) -> JSONValue? { value(name) }

    mutating func object(_ name: String) throws -> ConfigReader? {
        guard let value = value(name) else { return nil }
        return try ConfigReader(value, path: key(name))
    }

    func finish() throws {
        if let unknown = members.keys.sorted().first(where: { !used.contains($0) }) {
            throw ConfigurationError(.unknownKey, key: key(unknown), "is not a known key (see docs/configuration.md)")
        }
    }
}
