import Foundation
import PushWorkerCore
import PushWorkerEndpoints
import PushWorkerKafka

extension ServiceConfiguration {
    /// librdkafka properties that name files read when a client starts (TLS material, Kerberos keytab).
    static let fileProperties = [
        "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
        "ssl.crl.location", "sasl.kerberos.keytab",
    ]

    /// Checks that every file a TLS or SASL property names exists and is readable, so a wrong path stops
    /// startup with the property and the path named instead of failing inside librdkafka later.
    /// `ssl.ca.location` may also be `probe` (librdkafka searches the system's CA locations).
    /// - Throws: ``ConfigurationError`` naming the property.
    func checkFileProperties() throws {
        for (section, properties) in [("kafka", kafka), ("consumer", consumer), ("producer", producer)] {
            for name in Self.fileProperties {
                guard let value = properties[name], !value.isEmpty else { continue }
                if name == "ssl.ca.location", value == "probe" { continue }
                // ssl.ca.location may list several paths separated by ',' on some platforms; check each.
                let paths = name == "ssl.ca.location" ? value.split(separator: ",").map(String.init) : [value]
                for path in paths {
                    var isDirectory: ObjCBool = false
                    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                        throw ConfigurationError(.invalidValue, key: "\(section).\(name)", "the file '\(path)' does not exist")
                    }
                    guard FileManager.default.isReadableFile(atPath: path) else {
                        throw ConfigurationError(.invalidValue, key: "\(section).\(name)", "the file '\(path)' is not readable by this user (uid \(getuid()))")
                    }
                    if isDirectory.boolValue, name != "ssl.ca.location" {
                        throw ConfigurationError(.invalidValue, key: "\(section).\(name)", "'\(path)' is a directory, not a file")
                    }
                }
            }
        }
    }

    /// Checks what no single key can: required values, librdkafka's view of the properties, worker programs.
    /// - Throws: ``ConfigurationError``.
    public func check() throws {
        if inputTopics.isEmpty { throw ConfigurationError(.invalidValue, key: "inputTopics", "must name at least one topic") }
        if inputTopics.contains(resultsTopic) {
            throw ConfigurationError(.invalidValue, key: "resultsTopic", "'\(resultsTopic)' is also an input topic; results would be consumed as pushes")
        }
        // An input topic starting with `^` is a regular expression (librdkafka's pattern subscription).
        let named = inputTopics.filter { !$0.hasPrefix("^") }.map { ("inputTopics", $0) }
        for (key, name) in named + [("resultsTopic", resultsTopic)] + (deadLetter.map { [("deadLetter.topic", $0.topic)] } ?? [])
            + (retries.enabled ? [("retries.topic", retries.topic)] : [])
            + (statusPage.enabled ? [("statusPage.topic", statusPage.topic)] : [])
        where !name.isEmpty && !Self.isLegalTopicName(name) {
            throw ConfigurationError(.invalidValue, key: key, "'\(name)' is not a legal Kafka topic name (1–249 characters from a-z, A-Z, 0-9, '.', '_' and '-')")
        }
        if let deadLetter {
            if deadLetter.topic.isEmpty { throw ConfigurationError(.invalidValue, key: "deadLetter.topic", "must not be empty") }
            if inputTopics.contains(deadLetter.topic) {
                throw ConfigurationError(.invalidValue, key: "deadLetter.topic", "'\(deadLetter.topic)' is also an input topic; failed records would run again at once, in a loop (redrive them with `pushworker redrive` instead)")
            }
            if deadLetter.topic == resultsTopic {
                throw ConfigurationError(.invalidValue, key: "deadLetter.topic", "'\(deadLetter.topic)' is also the results topic; readers of results would get input records")
            }
        }
        if retries.enabled {
            let topic = retries.topic
            if topic.isEmpty { throw ConfigurationError(.invalidValue, key: "retries.topic", "must not be empty; turn retries off with retries.enabled: false") }
            if inputTopics.contains(topic) {
                throw ConfigurationError(.invalidValue, key: "retries.topic", "'\(topic)' is also an input topic; the retry topic must be a topic of its own")
            }
            if topic == resultsTopic {
                throw ConfigurationError(.invalidValue, key: "retries.topic", "'\(topic)' is also the results topic; readers of results would get input records")
            }
            if topic == deadLetter?.topic {
                throw ConfigurationError(.invalidValue, key: "retries.topic", "'\(topic)' is also the dead-letter topic; dead letters would run again at once, in a loop")
            }
        }
        if statusPage.enabled {
            let topic = statusPage.topic
            if topic.isEmpty { throw ConfigurationError(.invalidValue, key: "statusPage.topic", "must not be empty; turn the status page off with statusPage.enabled: false") }
            if subscribedTopics.contains(topic) || outputTopics.contains(topic) {
                throw ConfigurationError(.invalidValue, key: "statusPage.topic", "'\(topic)' is also an input, results, dead-letter or retry topic; the status topic must be a topic of its own")
            }
        }
        if groupId.isEmpty { throw ConfigurationError(.invalidValue, key: "groupId", "must not be empty") }
        if bootstrapServers.isEmpty {
            throw ConfigurationError(.invalidValue, key: "kafka.bootstrap.servers", "is empty; set it in the file, PUSHWORKER_BOOTSTRAP_SERVERS or --bootstrap-servers")
        }
        if consumer["enable.auto.offset.store"] == "true" || kafka["enable.auto.offset.store"] == "true" {
            throw ConfigurationError(.kafkaProperty, key: "consumer.enable.auto.offset.store", "pushworker stores each offset itself once its result is acknowledged; remove this property")
        }
        if !exactlyOnce.enabled, producer["transactional.id"] != nil || kafka["transactional.id"] != nil {
            throw ConfigurationError(.kafkaProperty, key: "producer.transactional.id", "a transactional producer needs pushworker's exactly-once mode; remove the property and set exactlyOnce: { enabled: true, transactionalId: ... } instead")
        }
        if exactlyOnce.enabled, ["read_uncommitted"].contains(consumer["isolation.level"] ?? kafka["isolation.level"] ?? "") {
            throw ConfigurationError(.kafkaProperty, key: "consumer.isolation.level", "read_uncommitted would run input records of aborted upstream transactions in the exactly-once mode; remove it (librdkafka's default is read_committed)")
        }
        try checkFileProperties()
        // Each property through rd_kafka_conf_set, then a client created offline with them all (librdkafka
        // loads the TLS material and checks SASL settings at creation), as `run` would.
        for (section, properties) in [("consumer", consumerProperties), ("producer", producerProperties)] {
            let key = section == "consumer" ? "kafka/consumer" : "kafka/producer"
            do {
                try properties.validateByCreatingClient(consumer: section == "consumer")
            } catch let error as KafkaError where error.code == .invalidConfiguration {
                throw ConfigurationError(.kafkaProperty, key: key, error.message)
            } catch let error as KafkaError {
                throw ConfigurationError(.kafkaProperty, key: key, "librdkafka cannot create the \(section) with these properties: \(error.message)")
            }
        }
        if httpServer.enabled {
            do {
                _ = try EndpointAddress.resolve(host: httpServer.host, port: httpServer.port)
            } catch {
                throw ConfigurationError(.invalidValue, key: "httpServer.host",
                    "'\(httpServer.host)' is not an IPv4/IPv6 address and does not resolve; use e.g. 0.0.0.0, 127.0.0.1 or :: (set in the file or PUSHWORKER_HTTP_HOST)")
            }
        }
        for (type, spec) in workers.sorted(by: { $0.key < $1.key }) {
            try Self.checkWorker(spec, key: "workers.\(type)")
        }
        if let defaultWorker { try Self.checkWorker(defaultWorker, key: "defaultWorker") }
    }

    /// Checks a worker declaration at `key`: an exec worker's program must be found and executable.
    /// - Throws: ``ConfigurationError`` naming `<key>.command`.
    static func checkWorker(_ spec: WorkerSpec, key: String) throws {
        if case .exec(let arguments, _, _, _) = spec.kind, let program = arguments.first, ExecWorker.resolve(program) == nil {
            let location = program.contains("/") ? (program.hasPrefix("/") ? "" : " (relative to the working directory \(FileManager.default.currentDirectoryPath))") : " in PATH"
            throw ConfigurationError(.invalidValue, key: "\(key).command", "the program '\(program)' is not found or not executable\(location)")
        }
    }
}
