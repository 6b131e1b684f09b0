import CRdKafka
import Synchronization

/// Owns one `rd_kafka_t` (producer or consumer) and destroys it in `deinit`.
///
/// `@unchecked Sendable`: the stored state is the `rd_kafka_t` pointer, set once in `init` and freed
/// once in `deinit` (unless ``leakAtRelease()`` asked otherwise, an atomic flag), and librdkafka's API is
/// thread-safe for every call made through it.
final class KafkaClient: @unchecked Sendable {
    let handle: OpaquePointer
    let callbacks: KafkaCallbacks
    /// Set by ``leakAtRelease()``: `deinit` leaves the handle to the process's exit.
    private let leaked = Atomic<Bool>(false)

    enum Kind { case producer, consumer }

    /// Creates the client. librdkafka's `log_cb` and `error_cb` go to `callbacks.log`.
    init(kind: Kind, configuration: KafkaConfiguration, callbacks: KafkaCallbacks) throws {
        let conf = try configuration.makeConf()
        self.callbacks = callbacks
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, buffer in
            guard let callbacks = KafkaCallbacks.from(rk), let log = callbacks.log else { return }
            log(KafkaLogMessage(
                severity: level,
                facility: facility.map { String(cString: $0) } ?? "",  // NUL-safe: librdkafka's own text (names, errors, versions)
                message: buffer.map { String(cString: $0) } ?? "",  // NUL-safe: librdkafka's own text (names, errors, versions)
                client: rk.map { String(cString: rd_kafka_name($0)) } ?? ""  // NUL-safe: librdkafka's own text (names, errors, versions)
            ))
        }
        rd_kafka_conf_set_error_cb(conf) { rk, err, reason, _ in
            guard let callbacks = KafkaCallbacks.from(rk) else { return }
            callbacks.error?(rd_kafka_resp_err_t(rawValue: err), reason.map { String(cString: $0) } ?? "")  // NUL-safe: librdkafka's own text (names, errors, versions)
            guard let log = callbacks.log else { return }
            let name = String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: err)))  // NUL-safe: librdkafka's own text (names, errors, versions)
            log(KafkaLogMessage(
                severity: 3,
                facility: "ERROR",
                message: "\(name): \(reason.map { String(cString: $0) } ?? "")",  // NUL-safe: librdkafka's own text (names, errors, versions)
                client: rk.map { String(cString: rd_kafka_name($0)) } ?? ""  // NUL-safe: librdkafka's own text (names, errors, versions)
            ))
        }
        if callbacks.delivery != nil {
            rd_kafka_conf_set_dr_msg_cb(conf) { rk, message, _ in
                guard let message, let callbacks = KafkaCallbacks.from(rk) else { return }
                callbacks.delivery?(message)
            }
        }
        if callbacks.rebalance != nil {
            rd_kafka_conf_set_rebalance_cb(conf) { rk, err, partitions, _ in
                guard let rk, let callbacks = KafkaCallbacks.from(rk) else { return }
                callbacks.rebalance?(rk, err, partitions)
            }
        }
        if callbacks.statistics != nil {
            rd_kafka_conf_set_stats_cb(conf) { rk, json, length, _ in
                // Returning 0 lets librdkafka free `json`: it is parsed here, in place.
                guard let json, let callbacks = KafkaCallbacks.from(rk), let handler = callbacks.statistics else { return 0 }
                if let statistics = KafkaStatistics.parse(chars: UnsafeBufferPointer(start: json, count: length)) { handler(statistics) }
                return 0
            }
        }
        do throws(KafkaError) {
            self.handle = try KafkaClient.newHandle(kind: kind, conf: conf)
        } catch {
            throw KafkaError(.clientCreation, "rd_kafka_new failed: \(error.message)")
        }
    }

    /// Creates an `rd_kafka_t` of `kind` from `conf` (`rd_kafka_new`), which then owns `conf`; when that
    /// fails, `conf` is destroyed here.
    /// - Throws: ``KafkaError/Code/clientCreation`` whose message is librdkafka's own text, bare (callers
    ///   word their own message around it).
    static func newHandle(kind: Kind, conf: OpaquePointer) throws(KafkaError) -> OpaquePointer {
        var errstr = [CChar](repeating: 0, count: 512)
        let type = kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        guard let rk = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            let text = String(decoding: errstr.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw KafkaError(.clientCreation, text)
        }
        return rk
    }

    deinit {
        if !leaked.load(ordering: .acquiring) { rd_kafka_destroy(handle) }
    }

    /// Leaves the `rd_kafka_t` undestroyed when this object goes, with its callbacks (which librdkafka's
    /// threads still call): for a consumer that librdkafka would abort the process on destroying
    /// (``KafkaConsumer``'s workaround of librdkafka issue #4312). Its threads and memory stay until the
    /// process exits.
    func leakAtRelease() {
        guard !leaked.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = Unmanaged.passRetained(callbacks)
    }

    /// The client's name, e.g. `rdkafka#producer-1`.
    var name: String { String(cString: rd_kafka_name(handle)) }  // NUL-safe: librdkafka's own text (names, errors, versions)

    /// The names of the cluster's topics, sorted (`rd_kafka_metadata` for all topics; this asks for none by
    /// name, so a broker that creates topics on request creates none). Blocking.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails.
    func topicNames(timeoutMs: Int32) throws -> [String] {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 1, nil, &metadata, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { throw KafkaError(.admin, "metadata of all topics", err) }
        defer { rd_kafka_metadata_destroy(metadata) }
        return (0..<Int(metadata.pointee.topic_cnt)).map { String(cString: metadata.pointee.topics[$0].topic) }.sorted()  // NUL-safe: librdkafka's own text (topic names are ASCII)
    }

    /// The cluster id the brokers report in their metadata (`rd_kafka_clusterid`), or `nil` when no broker
    /// answered within `timeoutMs` or the brokers report none. Blocking.
    func clusterId(timeoutMs: Int32) -> String? {
        guard let id = rd_kafka_clusterid(handle, timeoutMs) else { return nil }
        defer { rd_kafka_mem_free(handle, id) }
        return String(cString: id)  // NUL-safe: librdkafka's own text (names, errors, versions)
    }

    /// The number of partitions of `topic` from the cluster's metadata (`rd_kafka_topic_new`, then
    /// `rd_kafka_metadata` for that topic alone). The topic stays known to this client, with its partitions
    /// and leaders. Blocking.
    /// - Throws: ``KafkaError/Code/admin`` if the request fails or the topic does not exist.
    func partitionCount(topic: String, timeoutMs: Int32) throws -> Int {
        guard let rkt = rd_kafka_topic_new(handle, topic, nil) else {
            throw KafkaError(.admin, "cannot create a topic handle for \(topic)")
        }
        defer { rd_kafka_topic_destroy(rkt) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 0, rkt, &metadata, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { throw KafkaError(.admin, "metadata for \(topic)", err) }
        defer { rd_kafka_metadata_destroy(metadata) }
        for index in 0..<Int(metadata.pointee.topic_cnt) {
            let entry = metadata.pointee.topics[index]
            guard String(cString: entry.topic) == topic else { continue }  // NUL-safe: librdkafka's own text (names, errors, versions)
            if entry.err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(.admin, "topic \(topic)", entry.err) }
            return Int(entry.partition_cnt)
        }
        throw KafkaError(.admin, "topic \(topic) is not in the cluster's metadata")
    }
}
