import CRdKafka
import Synchronization

/// Finds out within moments whether a Kafka cluster answers at `bootstrap.servers`, before a command-line
/// tool starts its real work, so that a missing broker is one clear error instead of librdkafka retrying
/// (and logging) until `message.timeout.ms` (30 s by default) runs out.
///
/// A short-lived producer handle with the given properties (security settings included) asks for the
/// cluster's metadata (`rd_kafka_metadata`, brokers only, in 200 ms steps), serving its `error_cb` between
/// steps: librdkafka reports `ALL_BROKERS_DOWN` as soon as a connection to every bootstrap broker has failed
/// (refused, not resolvable, TLS or SASL failure), which ends the probe at once. A broker that never
/// answers (a dropped connection attempt) ends it after `timeout`. The handle's log lines are not passed
/// on: the error carries librdkafka's first reason instead.
public enum KafkaBrokerProbe {
    /// Returns once a broker has answered a metadata request.
    /// - Parameters:
    ///   - configuration: librdkafka properties; `bootstrap.servers` at least.
    ///   - timeout: the longest wait for an answer (default 10 s).
    /// - Throws: ``KafkaError/Code/noBroker`` when every broker connection failed (the message is librdkafka's
    ///   first error reason, e.g. `127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection
    ///   refused (after 0ms in state CONNECT)`) or none answered within `timeout`;
    ///   ``KafkaError/Code/clientCreation`` when librdkafka refuses the properties. Blocking: call on a
    ///   dedicated thread.
    public static func check(_ configuration: KafkaConfiguration, timeout: Duration = .seconds(10)) throws -> Void {
        let state = Mutex<(allDown: Bool, firstReason: String?)>((false, nil))
        let callbacks = KafkaCallbacks(log: nil, error: { error, reason in
            state.withLock { state in
                if error == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN {
                    state.allDown = true
                } else if state.firstReason == nil {
                    state.firstReason = reason
                }
            }
        })
        let client = try KafkaClient(kind: .producer, configuration: configuration, callbacks: callbacks)
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(client.handle, 0, nil, &metadata, 200)
            if err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata {
                rd_kafka_metadata_destroy(metadata)
                return
            }
            rd_kafka_poll(client.handle, 0)  // serves error_cb
            let (allDown, reason) = state.withLock { ($0.allDown, $0.firstReason) }
            if allDown {
                throw KafkaError(.noBroker, reason ?? "all brokers are down", rdKafkaError: RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN.rawValue)
            }
            if ContinuousClock.now >= deadline {
                throw KafkaError(.noBroker, reason ?? "no broker answered within \(timeout)", rdKafkaError: err.rawValue)
            }
        }
    }
}
