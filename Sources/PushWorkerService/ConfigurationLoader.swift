import Foundation
import PushWorkerCore
import PushWorkerEndpoints
import PushWorkerKafka

extension ServiceConfiguration {
    /// Environment variables read over the file: the name and what it sets.
    public static let environmentOverrides: [(name: String, sets: String)] = [
        ("PUSHWORKER_BOOTSTRAP_SERVERS", "kafka.\"bootstrap.servers\""),
        ("PUSHWORKER_GROUP_ID", "groupId"),
        ("PUSHWORKER_INPUT_TOPICS", "inputTopics (comma-separated)"),
        ("PUSHWORKER_RESULTS_TOPIC", "resultsTopic"),
        ("PUSHWORKER_DEAD_LETTER_TOPIC", "deadLetter.topic (turns the dead-letter topic on)"),
        ("PUSHWORKER_MAX_IN_FLIGHT", "maxInFlight"),
        ("PUSHWORKER_LOG_LEVEL", "log.level"),
        ("PUSHWORKER_LOG_FORMAT", "log.format"),
        ("PUSHWORKER_HTTP_ENABLED", "httpServer.enabled (true or false)"),
        ("PUSHWORKER_HTTP_HOST", "httpServer.host"),
        ("PUSHWORKER_HTTP_PORT", "httpServer.port (0 = any free port)"),
        ("PUSHWORKER_GROUP_INSTANCE_ID", "consumer.\"group.instance.id\" (static membership, e.g. the pod name)"),
        ("PUSHWORKER_KAFKA_<NAME>", "kafka.\"<name>\" (and consumer/producer where the file sets it): any librdkafka property, upper-case with '_' for '.' (e.g. PUSHWORKER_KAFKA_SASL_PASSWORD)"),
    ]

    /// The prefix of environment variables that set librdkafka properties: `PUSHWORKER_KAFKA_SASL_PASSWORD`
    /// sets `sasl.password` in `kafka` (for secrets from a Kubernetes Secret or a systemd credential file).
    public static let kafkaPropertyEnvironmentPrefix = "PUSHWORKER_KAFKA_"

    /// The librdkafka property an environment variable names: `PUSHWORKER_KAFKA_SSL_CA_LOCATION` →
    /// `ssl.ca.location`; `nil` for any other variable.
    public static func kafkaProperty(forEnvironmentVariable name: String) -> String? {
        guard name.hasPrefix(kafkaPropertyEnvironmentPrefix), name.count > kafkaPropertyEnvironmentPrefix.count else { return nil }
        return name.dropFirst(kafkaPropertyEnvironmentPrefix.count).lowercased().replacingOccurrences(of: "_", with: ".")
    }

    /// Loads a configuration: built-in defaults, then the JSON5 file at `path` (if any), then the
    /// environment overrides (``environmentOverrides``).
    ///
    /// - Throws: ``ConfigurationError`` naming the bad key (unknown keys are refused, so typos are caught).
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        if let path {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ConfigurationError(.unreadable, key: nil, "cannot read the config file \(path): \(error.localizedDescription)")
            }
            return try load(json5: data, file: path, environment: environment)
        }
        try configuration.applyEnvironment(environment)
        try configuration.check()
        return configuration
    }

    /// Loads a configuration from a JSON5 document in memory, as ``load(path:environment:)`` does from a
    /// file: built-in defaults, then the document, then the environment overrides, then the checks.
    /// - Parameter file: how messages name the document (default `the config`).
    /// - Throws: ``ConfigurationError`` naming the bad key.
    public static func load(json5 data: Data, file: String = "the config", environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        try configuration.apply(json5: data, file: file, environment: environment)
        try configuration.applyEnvironment(environment)
        try configuration.check()
        return configuration
    }

    /// Parses a JSON5 document over this configuration.
    /// - Throws: ``ConfigurationError``.
    public mutating func apply(json5 data: Data, file: String = "the config", environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        // Foundation's JSON5 scanner traps (a fatal error, not a thrown error) on some bytes that are not
        // UTF-8, e.g. `{` followed by eight 0xFF bytes (found by Fuzz/FuzzConfiguration): check UTF-8 first.
        var bytes = data.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        decoding: while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: break decoding
            case .error:
                throw ConfigurationError(.syntax, key: nil, "\(file) is not valid JSON5: the bytes at offset \(offset) are not UTF-8")
            }
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root: JSONValue
        do {
            root = try decoder.decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            let reason = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
            throw ConfigurationError(.syntax, key: nil, "\(file) is not valid JSON5: \(reason)")
        } catch {
            throw ConfigurationError(.syntax, key: nil, "\(file) is not valid JSON5: \(error)")
        }
        var reader = try ConfigReader(root, path: "")
        if let kafka = try reader.properties("kafka") { self.kafka = self.kafka.merging(kafka) }
        if let consumer = try reader.properties("consumer") { self.consumer = consumer }
        if let producer = try reader.properties("producer") { self.producer = producer }
        if let value = try reader.string("groupId") { groupId = value }
        if let value = try reader.stringList("inputTopics") { inputTopics = value }
        if let value = try reader.stringList("permittedTypes") { permittedTypes = value }
        if let value = try reader.string("resultsTopic") { resultsTopic = value }
        if var section = try reader.object("deadLetter") {
            guard let topic = try section.string("topic") else {
                throw ConfigurationError(.invalidValue, key: "deadLetter.topic", "is required in deadLetter (the dead-letter topic); remove deadLetter to turn dead letters off")
            }
            let reasons = try section.stringList("reasons")
            if reasons?.isEmpty == true {
                throw ConfigurationError(.invalidValue, key: "deadLetter.reasons", "is empty, so nothing would be dead-lettered; list reasons (e.g. [\"workerError\", \"timeout\"]) or remove it for every failed result")
            }
            for reason in reasons ?? [] {
                if reason.isEmpty {
                    throw ConfigurationError(.invalidValue, key: "deadLetter.reasons", "has an empty reason; list failed reasons such as \"workerError\" or \"timeout\"")
                }
                // Names that can never match a failed result: a typo for something else, refused rather
                // than silently dead-lettering nothing.
                if Self.neverFailedReasons.contains(reason) {
                    throw ConfigurationError(.invalidValue, key: "deadLetter.reasons", "'\(reason)' is not a reason of failed results (only failed results are dead-lettered); built-in failed reasons are \(Self.failedReasons.joined(separator: ", ")), or a worker's own")
                }
            }
            deadLetter = DeadLetterConfiguration(topic: topic, reasons: reasons)
            try section.finish()
        }
        if let value = try reader.int("maxInFlight", min: 1) { maxInFlight = value }
        if let value = try reader.int("maxBufferedRecords", min: 1) { maxBufferedRecords = value }
        if let value = try reader.int("maxPayloadBytes", min: 1) { maxPayloadBytes = value }
        if let value = try reader.int("defaultBudgetMs", min: 1) { defaultBudgetMs = value }
        if let value = try reader.int("drainTimeoutMs", min: 0) { drainTimeoutMs = value }
        if var log = try reader.object("log") {
            if let value = try log.string("level") { logLevel = try Self.parseLevel(value, key: "log.level") }
            if let value = try log.string("format") { logFormat = try Self.parseFormat(value, key: "log.format") }
            try log.finish()
        }
        if var http = try reader.object("httpServer") {
            if let value = try http.bool("enabled") { httpServer.enabled = value }
            if let value = try http.string("host") { httpServer.host = value }
            if let value = try http.int("port", min: 0, max: 65_535) { httpServer.port = value }
            try http.finish()
        }
        if var section = try reader.object("health") {
            if let value = try section.int("stuckResultsAfterMs", min: 1) { health.stuckResultsAfter = .milliseconds(value) }
            try section.finish()
        }
        if var dev = try reader.object("dev") {
            if let value = try dev.int("partitions", min: 1) { devPartitions = value }
            try dev.finish()
        }
        if var workers = try reader.object("workers") {
            for type in workers.keys {
                guard var spec = try workers.object(type) else { continue }
                self.workers[type] = try Self.parseWorker(&spec, environment: environment, secretVariables: &secretVariables)
            }
            try workers.finish()
        }
        if var spec = try reader.object("defaultWorker") {
            defaultWorker = try Self.parseWorker(&spec, environment: environment, secretVariables: &secretVariables)
        }
        if let value = reader.json(WorkerSettings.configKey) { workerSettings = try Self.parseWorkerSettings(value) }
        try reader.finish()
    }

    mutating func applyEnvironment(_ environment: [String: String]) throws {
        if let value = environment["PUSHWORKER_BOOTSTRAP_SERVERS"], !value.isEmpty { kafka["bootstrap.servers"] = value }
        if let value = environment["PUSHWORKER_GROUP_ID"], !value.isEmpty { groupId = value }
        if let value = environment["PUSHWORKER_INPUT_TOPICS"], !value.isEmpty {
            inputTopics = value.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        if let value = environment["PUSHWORKER_RESULTS_TOPIC"], !value.isEmpty { resultsTopic = value }
        if let value = environment["PUSHWORKER_DEAD_LETTER_TOPIC"], !value.isEmpty {
            if deadLetter == nil { deadLetter = DeadLetterConfiguration(topic: value) } else { deadLetter?.topic = value }
        }
        if let value = environment["PUSHWORKER_MAX_IN_FLIGHT"], !value.isEmpty {
            guard let number = Int(value), number >= 1 else {
                throw ConfigurationError(.invalidValue, key: "PUSHWORKER_MAX_IN_FLIGHT", "must be an integer of at least 1, got '\(value)'")
            }
            maxInFlight = number
        }
        if let value = environment["PUSHWORKER_LOG_LEVEL"], !value.isEmpty { logLevel = try Self.parseLevel(value, key: "PUSHWORKER_LOG_LEVEL") }
        if let value = environment["PUSHWORKER_LOG_FORMAT"], !value.isEmpty { logFormat = try Self.parseFormat(value, key: "PUSHWORKER_LOG_FORMAT") }
        if let value = environment["PUSHWORKER_HTTP_ENABLED"], !value.isEmpty {
            switch value.lowercased() {
            case "true", "1", "yes": httpServer.enabled = true
            case "false", "0", "no": httpServer.enabled = false
            default: throw ConfigurationError(.invalidValue, key: "PUSHWORKER_HTTP_ENABLED", "must be true or false, got '\(value)'")
            }
        }
        if let value = environment["PUSHWORKER_HTTP_HOST"], !value.isEmpty { httpServer.host = value }
        if let value = environment["PUSHWORKER_HTTP_PORT"], !value.isEmpty {
            guard let number = Int(value), (0...65_535).contains(number) else {
                throw ConfigurationError(.invalidValue, key: "PUSHWORKER_HTTP_PORT", "must be a port number from 0 to 65535 (0 = any free port), got '\(value)'")
            }
            httpServer.port = number
        }
        if let value = environment["PUSHWORKER_GROUP_INSTANCE_ID"], !value.isEmpty { consumer["group.instance.id"] = value }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            guard let property = Self.kafkaProperty(forEnvironmentVariable: name), !value.isEmpty else { continue }
            do {
                try KafkaConfiguration([property: value]).validate()
            } catch let error as KafkaError {
                throw ConfigurationError(.kafkaProperty, key: name, "sets librdkafka property '\(property)': \(error.message)")
            }
            kafka[property] = value
            // The environment wins over the file everywhere the file set the property.
            if consumer[property] != nil { consumer[property] = value }
            if producer[property] != nil { producer[property] = value }
        }
    }

    /// pushworker's own reasons of `failed` results (contract section 2).
    static let failedReasons = [ResultReason.payloadTooLarge, .invalidPayload, .workerError, .timeout].map(\.rawValue)
    /// Result names and pushworker's `noData` reasons: never the reason of a `failed` result.
    static let neverFailedReasons: Set<String> = Set(
        [ResultReason.notSilent, .expired, .noWorker].map(\.rawValue) + BackgroundFetchResult.allCases.map(\.rawValue))

    /// Whether `name` is a legal Kafka topic name: 1–249 characters from `a-z A-Z 0-9 . _ -`, not `.` or
    /// `..` (Apache Kafka's `Topic.validate`).
    static func isLegalTopicName(_ name: String) -> Bool {
        guard (1...249).contains(name.utf8.count), name != ".", name != ".." else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

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
        if groupId.isEmpty { throw ConfigurationError(.invalidValue, key: "groupId", "must not be empty") }
        if bootstrapServers.isEmpty {
            throw ConfigurationError(.invalidValue, key: "kafka.bootstrap.servers", "is empty; set it in the file, PUSHWORKER_BOOTSTRAP_SERVERS or --bootstrap-servers")
        }
        if consumer["enable.auto.offset.store"] == "true" || kafka["enable.auto.offset.store"] == "true" {
            throw ConfigurationError(.kafkaProperty, key: "consumer.enable.auto.offset.store", "pushworker stores each offset itself once its result is acknowledged; remove this property")
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
                _ = try EndpointAddress.resolve(host: httpServer.host, port: UInt16(clamping: httpServer.port))
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

    private static func checkWorker(_ spec: WorkerSpec, key: String) throws {
        if case .exec(let arguments, _, _, _) = spec.kind, let program = arguments.first, ExecWorker.resolve(program) == nil {
            let location = program.contains("/") ? (program.hasPrefix("/") ? "" : " (relative to the working directory \(FileManager.default.currentDirectoryPath))") : " in PATH"
            throw ConfigurationError(.invalidValue, key: "\(key).command", "the program '\(program)' is not found or not executable\(location)")
        }
    }

    private static func parseLevel(_ value: String, key: String) throws -> PushWorkerLogger.Level {
        guard let level = PushWorkerLogger.Level(rawValue: value.lowercased()) else {
            throw ConfigurationError(.invalidValue, key: key, "must be one of \(PushWorkerLogger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got '\(value)'")
        }
        return level
    }

    private static func parseFormat(_ value: String, key: String) throws -> PushWorkerLogger.Format {
        guard let format = PushWorkerLogger.Format(rawValue: value.lowercased()) else {
            throw ConfigurationError(.invalidValue, key: key, "must be text or json, got '\(value)'")
        }
        return format
    }

    private static func parseWorker(_ spec: inout ConfigReader, environment: [String: String], secretVariables: inout Set<String>) throws -> WorkerSpec {
        guard let kind = try spec.string("kind") else {
            throw ConfigurationError(.invalidValue, key: spec.path + ".kind", "is required: exec, http or noop")
        }
        // Unknown keys first, so a misspelt key is named rather than a "required" key it was meant to be.
        let common: Set<String> = ["kind", "budgetMs", "maxConcurrent"]
        // nil for an unknown kind, refused below once the common keys are read.
        let known: Set<String>? = switch kind {
        case "exec": common.union(["command", "env", "workingDirectory", "terminationGraceMs"])
        case "noop": common.union(["result", "reason", "delayMs"])
        case "http": common.union(["url", "headers", "headersFromEnv", "timeoutMs"])
        default: nil
        }
        if let known, let unknown = spec.keys.first(where: { !known.contains($0) }) {
            let hint = known.sorted().filter { $0 != "kind" }.joined(separator: ", ")
            throw ConfigurationError(.unknownKey, key: spec.path + ".\(unknown)", "is not a key of a \(kind) worker (known: \(hint))")
        }
        let budgetMs = try spec.int("budgetMs", min: 1)
        let maxConcurrent = try spec.int("maxConcurrent", min: 1)
        var result: WorkerSpec
        switch kind {
        case "exec":
            guard let command = try spec.stringList("command"), !command.isEmpty, !command[0].isEmpty else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".command", "is required for an exec worker: the program and its arguments, e.g. [\"./worker.sh\", \"--fast\"]")
            }
            let environment = try spec.stringMap("env") ?? [:]
            let workingDirectory = try spec.string("workingDirectory")
            let grace = try spec.int("terminationGraceMs", min: 0) ?? 2000
            result = WorkerSpec(kind: .exec(arguments: command, environment: environment, workingDirectory: workingDirectory, terminationGraceMs: grace), budgetMs: budgetMs)
        case "noop":
            let text = try spec.string("result") ?? "noData"
            guard let outcome = BackgroundFetchResult(rawValue: text) else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".result", "must be newData, noData or failed, got '\(text)'")
            }
            let reason = try spec.string("reason")
            let delay = try spec.int("delayMs", min: 0) ?? 0
            result = WorkerSpec(kind: .noop(result: outcome, reason: reason, delayMs: delay), budgetMs: budgetMs)
        case "http":
            guard let text = try spec.string("url") else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".url", "is required for an http worker: an http:// or https:// URL")
            }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".url", "must be an http:// or https:// URL with a host, got '\(text)'")
            }
            var headers = try spec.stringMap("headers") ?? [:]
            for (header, variable) in try spec.stringMap("headersFromEnv") ?? [:] {
                secretVariables.insert(variable)
                guard let value = environment[variable] else {
                    throw ConfigurationError(.invalidValue, key: spec.path + ".headersFromEnv.\(header)", "the environment variable \(variable) is not set")
                }
                guard !value.isEmpty else {
                    throw ConfigurationError(.invalidValue, key: spec.path + ".headersFromEnv.\(header)", "the environment variable \(variable) is empty")
                }
                headers[header] = value
            }
            let timeoutMs = try spec.int("timeoutMs", min: 1) ?? 30_000
            result = WorkerSpec(kind: .http(url: url, headers: headers, timeoutMs: timeoutMs), budgetMs: budgetMs)
        default:
            throw ConfigurationError(.invalidValue, key: spec.path + ".kind", "unknown worker kind '\(kind)'; expected exec, http or noop")
        }
        result.maxConcurrent = maxConcurrent
        try spec.finish()
        return result
    }
}
