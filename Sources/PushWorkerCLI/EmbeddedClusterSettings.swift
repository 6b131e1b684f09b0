import PushWorker
import PushWorkerKafka

/// The consumer settings the service gets on the embedded cluster (librdkafka 2.0.2's mock broker), the
/// same in `pushworker dev` and `pushworker bench`: only what the mock itself needs, never a tuning.
///
/// - `fetch.wait.max.ms=10`: the mock broker answers a Fetch that finds no new record only after
///   `fetch.wait.max.ms` (librdkafka's default 500 ms), even when records arrive meanwhile, so a caught-up
///   consumer would see each new record up to half a second late. A real broker answers as soon as
///   `fetch.min.bytes` (1) have arrived, so this is not needed there.
///
/// A value set in the configuration (`kafka` or `consumer`) is kept.
enum EmbeddedClusterSettings {
    /// The consumer properties, by name.
    static let consumer: [String: String] = ["fetch.wait.max.ms": "10"]

    /// Sets ``consumer`` in `configuration.consumer` where the configuration's consumer properties do not
    /// set it already.
    static func apply(to configuration: inout ServiceConfiguration) {
        let properties = configuration.consumerProperties
        for (name, value) in consumer where properties[name] == nil {
            configuration.consumer[name] = value
        }
    }

    /// `properties` with ``consumer`` set where it does not set it already (for the bench's bare pipe).
    static func applied(to properties: KafkaConfiguration) -> KafkaConfiguration {
        var properties = properties
        for (name, value) in consumer { properties.setDefault(name, value) }
        return properties
    }
}
