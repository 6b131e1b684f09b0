extension ServiceConfiguration {
    /// Whether `name` is a legal Kafka topic name: 1–249 characters from `a-z A-Z 0-9 . _ -`, not `.` or
    /// `..` (Apache Kafka's `Topic.validate`).
    static func isLegalTopicName(_ name: String) -> Bool {
        guard (1...249).contains(name.utf8.count), name != ".", name != ".." else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
