import PushWorkerKafka

/// The sample pushes `pushworker dev --samples` sends: one for every outcome of contract section 2 with the
/// example configuration (`config/pushworker.json5`).
enum SamplePayloads {
    static func records(topic: String) -> [KafkaOutgoingRecord] {
        func record(_ json: String, key: String? = nil, headers: [KafkaHeader] = []) -> KafkaOutgoingRecord {
            KafkaOutgoingRecord(topic: topic, key: key.map { Array($0.utf8) }, value: Array(json.utf8), headers: headers)
        }
        let tooLarge = #"{"aps":{"content-available":1},"type":"ping","padding":""# + String(repeating: "x", count: 4100) + #""}"#
        return [
            record(#"{"aps":{"content-available":1},"type":"content-update","contentId":"article-123"}"#, key: "device-1",
                   headers: [KafkaHeader(name: "apns-id", string: "sample-newdata-exec"), KafkaHeader(name: "traceparent", string: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]),
            record(#"{"aps":{"content-available":1},"type":"content-update"}"#, key: "device-1",
                   headers: [KafkaHeader(name: "apns-id", string: "sample-nodata-exec")]),
            record(#"{"aps":{"content-available":1},"type":"ping"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-newdata-noop")]),
            record(#"{"aps":{"content-available":1},"type":"broken"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-workererror")]),
            record(#"{"aps":{"content-available":1},"type":"slow"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-timeout")]),
            record(#"{"aps":{"content-available":0},"type":"ping"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-notsilent")]),
            record(#"{"aps":{"content-available":1},"type":"ping"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-expired"), KafkaHeader(name: "apns-expiration", string: "1")]),
            record(#"{"aps":{"content-available":1},"type":"no-such-type"}"#, headers: [KafkaHeader(name: "apns-id", string: "sample-noworker")]),
            record(#"{"aps":{"content-available":1},"type":"ping""#, headers: [KafkaHeader(name: "apns-id", string: "sample-invalid")]),
            record(tooLarge, headers: [KafkaHeader(name: "apns-id", string: "sample-too-large")]),
        ]
    }
}
