import CRdKafka

/// Facts about the linked librdkafka.
public enum KafkaLibrary {
    /// `rd_kafka_version_str()`, e.g. `2.0.2`.
    public static var versionString: String { String(cString: rd_kafka_version_str()) }  // NUL-safe: librdkafka's own text (names, errors, versions)
    /// `rd_kafka_version()`, e.g. `0x020002ff` for 2.0.2.
    public static var version: Int32 { rd_kafka_version() }
}
