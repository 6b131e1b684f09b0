/// The state of one strict decode of worker settings (``SettingsDecoder``): the path prefix of the section,
/// whether this is the probing pass, and every object opened as a keyed container with the keys the type read.
///
/// Used by one synchronous decode on one thread and then dropped; never shared.
final class SettingsDecodingSession {
    /// An object the type opened as a keyed container.
    struct OpenedObject {
        var path: String
        var keys: [String]
        var read: Set<String> = []
        var typeName: String
    }

    /// The section's path, e.g. `workerSettings.content-update`.
    let root: String
    /// The probing pass: missing keys and values of the wrong type decode as placeholders (`""`, `0`,
    /// `false`, empty lists and objects) so that every key the type declares is read and known.
    let probing: Bool
    private(set) var objects: [OpenedObject] = []
    private var objectIndex: [String: Int] = [:]
    /// The type decoded at each path, for messages (`is not a setting of ContentUpdateWorker.Settings`).
    private var typeNames: [String: String] = [:]

    init(root: String, probing: Bool) {
        self.root = root
        self.probing = probing
    }

    /// The path of a coding path below the section: `workerSettings.x.retry.delays[2]`.
    func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.reduce(into: root) { text, key in
            if let index = key as? SettingsIndexKey { text += "[\(index.index)]" } else { text += "." + key.stringValue }
        }
    }

    /// The path of `key` in the object at `codingPath`.
    func path(_ codingPath: [any CodingKey], _ key: any CodingKey) -> String { path(codingPath + [key]) }

    /// Notes that `type` is decoded at `codingPath`.
    func decoding(_ type: Any.Type, at codingPath: [any CodingKey]) {
        typeNames[path(codingPath)] = Self.name(of: type)
    }

    /// Notes an object opened as a keyed container, with its keys.
    func opened(_ codingPath: [any CodingKey], keys: some Collection<String>) {
        let path = path(codingPath)
        guard objectIndex[path] == nil else { return }
        objectIndex[path] = objects.count
        objects.append(OpenedObject(path: path, keys: keys.sorted(), typeName: typeNames[path] ?? "the settings"))
    }

    /// Notes that the type read (or looked for) `keys` of the object at `codingPath`.
    func read(_ keys: [String], in codingPath: [any CodingKey]) {
        guard let index = objectIndex[path(codingPath)] else { return }
        objects[index].read.formUnion(keys)
    }

    /// The first key of an opened object that the type did not read, as an error naming the keys it does read.
    func firstUnknownKey() -> WorkerSettingsError? {
        for object in objects {
            guard let unknown = object.keys.first(where: { !object.read.contains($0) }) else { continue }
            let known = object.read.sorted()
            return WorkerSettingsError(.unknownKey, key: "\(object.path).\(unknown)",
                "is not a setting of \(object.typeName); known: \(known.isEmpty ? "none" : known.joined(separator: ", "))")
        }
        return nil
    }

    /// A type's name without its module: `ContentUpdateWorker.Settings`.
    static func name(of type: Any.Type) -> String {
        let full = String(reflecting: type)
        guard let dot = full.firstIndex(of: "."), !full[..<dot].contains("<") else { return full }
        return String(full[full.index(after: dot)...])
    }

    /// What a JSON value is, for messages: `a string`, `an integer`, `null`, ….
    static func describe(_ value: JSONValue?) -> String {
        switch value {
        case nil: "nothing"
        case .null: "null"
        case .bool: "a Boolean"
        case .int: "an integer"
        case .double: "a number with a fraction"
        case .string: "a string"
        case .array: "a list"
        case .object: "an object"
        }
    }

    /// A value of the wrong JSON type at `codingPath`.
    func mismatch(_ value: JSONValue?, expected: String, at codingPath: [any CodingKey]) -> WorkerSettingsError {
        if value == nil || value == .null {
            return WorkerSettingsError(.missingKey, key: path(codingPath), "is \(value == nil ? "missing" : "null"); \(expected) is required")
        }
        return WorkerSettingsError(.typeMismatch, key: path(codingPath), "must be \(expected), got \(Self.describe(value))")
    }
}
