/// The keyed container of ``SettingsDecoder``: every key the type asks for (read, looked for, or listed with
/// `allKeys`) is noted, so that the keys it never asks for are refused as unknown.
struct SettingsKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    let session: SettingsDecodingSession

    /// Every key of the object (the type iterates them, as `[String: T]` does, so all count as read).
    var allKeys: [Key] {
        session.read(Array(members.keys), in: codingPath)
        return members.keys.sorted().compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        session.read([key.stringValue], in: codingPath)
        return members[key.stringValue] != nil
    }

    /// The decoder of the value at `key`; a missing key is refused (outside the probing pass).
    private func child(_ key: Key) throws -> SettingsDecoder {
        session.read([key.stringValue], in: codingPath)
        let value = members[key.stringValue]
        if value == nil, !session.probing {
            let owner = session.objects.first { $0.path == session.path(codingPath) }?.typeName ?? "the settings"
            throw WorkerSettingsError(.missingKey, key: session.path(codingPath, key), "is missing; \(owner) requires it")
        }
        return SettingsDecoder(value: value, codingPath: codingPath + [key], session: session)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).isNull }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decode(type, key) }

    /// `nil` for a missing key or `null`.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        session.read([key.stringValue], in: codingPath)
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try SettingsDecoder(value: value, codingPath: codingPath + [key], session: session).decode(type)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type, key) }

    /// The one path of every `decode` overload: a present key (`null` is refused by the type decoded,
    /// unless it takes `null`, as an optional or `JSONValue` does).
    private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        let decoder = try child(key)
        return try decoder.decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        SettingsDecoder(value: .object(members), codingPath: codingPath, session: session)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}
