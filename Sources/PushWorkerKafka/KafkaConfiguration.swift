import CRdKafka

/// librdkafka client properties, passed to `rd_kafka_conf_set` unchanged.
///
/// Property names and values are librdkafka's own (see librdkafka `CONFIGURATION.md`). Only the properties
/// set here are sent: librdkafka's defaults are never re-sent, so a newer librdkafka's defaults apply.
/// Later assignments of the same name replace earlier ones.
public struct KafkaConfiguration: Sendable, Equatable {
    /// The properties, in the order they were first set.
    public private(set) var properties: [(name: String, value: String)] = []

    /// Creates a configuration from a list of properties.
    public init(_ properties: [String: String] = [:]) {
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) { self[name] = value }
    }

    /// The value of a property, or `nil` if it is not set here. Setting `nil` removes it.
    public subscript(name: String) -> String? {
        get { properties.first(where: { $0.name == name })?.value }
        set {
            if let index = properties.firstIndex(where: { $0.name == name }) {
                if let newValue { properties[index].value = newValue } else { properties.remove(at: index) }
            } else if let newValue {
                properties.append((name, newValue))
            }
        }
    }

    /// Returns a copy with every property of `other` set over these.
    public func merging(_ other: KafkaConfiguration) -> KafkaConfiguration {
        var result = self
        for (name, value) in other.properties { result[name] = value }
        return result
    }

    /// Sets a property only if it is not set yet (used for pushworker's own defaults, which a user's
    /// property always overrides).
    public mutating func setDefault(_ name: String, _ value: String) {
        if self[name] == nil { self[name] = value }
    }

    public static func == (lhs: KafkaConfiguration, rhs: KafkaConfiguration) -> Bool {
        lhs.properties.map { "\($0.name)=\($0.value)" } == rhs.properties.map { "\($0.name)=\($0.value)" }
    }

    /// Builds a `rd_kafka_conf_t`; the caller owns it (and hands it to `rd_kafka_new`).
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the property librdkafka rejected.
    func makeConf() throws -> OpaquePointer {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(.clientCreation, "rd_kafka_conf_new returned NULL")
        }
        var errstr = [CChar](repeating: 0, count: 512)
        for (name, value) in properties {
            let result = rd_kafka_conf_set(conf, name, value, &errstr, errstr.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                let text = String(decoding: errstr.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw KafkaError(.invalidConfiguration, "librdkafka property '\(name)': \(text)")
            }
        }
        return conf
    }
}

extension KafkaConfiguration {
    /// Checks every property with librdkafka (`rd_kafka_conf_set` on a scratch configuration).
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property librdkafka rejects.
    public func validate() throws {
        rd_kafka_conf_destroy(try makeConf())
    }

    /// Checks the properties as a client's creation does: creates a client with them (`rd_kafka_new`) and
    /// destroys it at once. librdkafka loads the TLS material (`ssl.ca.location`, `ssl.certificate.location`,
    /// `ssl.key.location`, …) and checks SASL settings at creation, so a CA file that is not a certificate
    /// is found here, as `run` would find it. The client gets no `bootstrap.servers`, so it never connects,
    /// and its logs are dropped.
    /// - Parameter consumer: whether to create a consumer (else a producer).
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` for a property librdkafka rejects;
    ///   ``KafkaError/Code/clientCreation`` with librdkafka's message when the client cannot be created.
    public func validateByCreatingClient(consumer: Bool) throws {
        var offline = self
        offline["bootstrap.servers"] = nil
        offline["metadata.broker.list"] = nil
        let conf = try offline.makeConf()
        rd_kafka_conf_set_log_cb(conf) { _, _, _, _ in }
        let rk = try KafkaClient.newHandle(kind: consumer ? .consumer : .producer, conf: conf)
        rd_kafka_destroy_flags(rk, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
    }
}
