import CRdKafka

/// Topic names by librdkafka topic handle (`rd_kafka_topic_t`), so that a record or a delivery report
/// usually costs one comparison, never a new `String` from `rd_kafka_topic_name`.
///
/// A handle is taken to name the same topic for as long as the client that gave it lives. Not synchronised:
/// each owner keeps it under the lock it already holds on its per-record path.
struct TopicNameCache {
    /// The handle asked for last and its name: records of one topic usually come in runs.
    private var lastHandle: UInt = 0
    private var lastName = ""
    /// Every handle seen, for clients that read or write several topics.
    private var names: [UInt: String] = [:]

    /// The name of the topic of `rkt` (`rd_kafka_topic_name`), or `""` for `nil`.
    mutating func name(of rkt: OpaquePointer?) -> String {
        let key = UInt(bitPattern: rkt)
        // lastHandle starts at 0 with "", the name of a nil handle.
        if key == lastHandle { return lastName }
        let name: String
        if let known = names[key] {
            name = known
        } else {
            name = rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""  // NUL-safe: topic names are [a-zA-Z0-9._-]+
            names[key] = name
        }
        lastHandle = key
        lastName = name
        return name
    }
}
