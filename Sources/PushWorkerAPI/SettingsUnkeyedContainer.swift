/// The unkeyed (list) container of ``SettingsDecoder``: elements' paths are `key[index]`.
struct SettingsUnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let session: SettingsDecodingSession
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], session: SettingsDecodingSession) {
        self.elements = elements
        self.codingPath = codingPath
        self.session = session
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The decoder of the next element.
    private mutating func next() throws -> SettingsDecoder {
        guard !isAtEnd else {
            throw WorkerSettingsError(.invalidValue, key: session.path(codingPath), "has \(elements.count) elements; more are required")
        }
        defer { currentIndex += 1 }
        return SettingsDecoder(value: elements[currentIndex], codingPath: codingPath + [SettingsIndexKey(currentIndex)], session: session)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if elements[currentIndex] == .null {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try generic(type) }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try generic(type) }
    mutating func decode(_ type: String.Type) throws -> String { try generic(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try generic(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try generic(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try generic(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try generic(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try generic(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try generic(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try generic(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try generic(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try generic(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try generic(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try generic(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try generic(type) }

    private mutating func generic<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = try next()
        return try decoder.decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next() }
}
