import Foundation
import PushWorkerCore

extension ServiceConfiguration {
    /// The error for a document that is not JSON5: the line, column and key path of the first problem
    /// (``JSON5SyntaxLocator``), e.g. `config/pushworker.json5 is not valid JSON5: line 3, column 3 (at
    /// groupId): expected ',' or '}' after the value of 'groupId', found 'w'`.
    static func syntaxError(_ problem: JSON5SyntaxLocator.Problem, file: String) -> ConfigurationError {
        ConfigurationError(.syntax, key: problem.keyPath.isEmpty ? nil : problem.keyPath, "\(file) is not valid JSON5: \(problem)")
    }

    /// The error for a document `JSONDecoder` refused after ``JSON5SyntaxLocator`` accepted it: the
    /// decoder's own text.
    static func syntaxError(decoderError: any Error, file: String) -> ConfigurationError {
        var reason = "\(decoderError)"
        if case let DecodingError.dataCorrupted(context) = decoderError {
            reason = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
        }
        return ConfigurationError(.syntax, key: nil, "\(file) is not valid JSON5: \(reason)")
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
        // The syntax is checked first, and a document that fails never reaches Foundation's decoder, which
        // traps on some invalid numbers (``JSON5SyntaxLocator``).
        if let problem = JSON5SyntaxLocator.locate(String(decoding: data, as: UTF8.self)) {
            throw Self.syntaxError(problem, file: file)
        }
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        let root: JSONValue
        do {
            // A line feed after the text (JSON5 whitespace: nothing changes): Foundation's JSON5 scanner reads
            // one byte past a number that ends the buffer, e.g. a file holding only `.5233727237` (found by
            // FuzzConfiguration under AddressSanitizer).
            root = try decoder.decode(JSONValue.self, from: data + [0x0A])
        } catch {
            throw Self.syntaxError(decoderError: error, file: file)
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
        if let value = try reader.bool("collapse") { collapse = value }
        if var section = try reader.object("dedupe") {
            var settings = DedupeConfiguration()
            if let value = try section.int("windowMs", min: 1, max: 2_147_483_647) { settings.window = .milliseconds(value) }
            if let value = try section.int("maxEntries", min: 1, max: DedupeConfiguration.maxEntriesLimit) { settings.maxEntries = value }
            // The section turns dedupe on; `enabled: false` keeps its settings written down but off.
            let enabled = try section.bool("enabled") ?? true
            dedupe = enabled ? settings : nil
            try section.finish()
        }
        if var section = try reader.object("exactlyOnce") {
            if let value = try section.bool("enabled") { exactlyOnce.enabled = value }
            if let value = try section.string("transactionalId") {
                guard !value.isEmpty else {
                    throw ConfigurationError(.invalidValue, key: "exactlyOnce.transactionalId", "is empty; name this member (stable across its restarts, unique in the group) or remove it for <groupId>-<host name>")
                }
                exactlyOnce.transactionalId = value
            }
            if let value = try section.int("commitIntervalMs", min: 1, max: 60_000) { exactlyOnce.commitInterval = .milliseconds(value) }
            if let value = try section.int("maxRecordsPerTransaction", min: 1, max: 1_000_000) { exactlyOnce.maxRecordsPerTransaction = value }
            try section.finish()
        }
        if var section = try reader.object("crashGuard") {
            if let value = try section.bool("enabled") { crashGuard.enabled = value }
            if let value = try section.int("deathLimit", min: 1, max: 1000) { crashGuard.deathLimit = value }
            if let value = try section.int("leaseRecords", min: 1, max: 1_000_000) { crashGuard.leaseRecords = value }
            try section.finish()
        }
        if var section = try reader.object("retries") {
            if let value = try section.bool("enabled") { retries.enabled = value }
            if let value = try section.string("topic") { retries.topic = value }
            if let value = try section.int("maxHoldMs", min: 0) { retries.maxHold = .milliseconds(value) }
            if let value = try section.int("maxHeld", min: 0, max: 10_000_000) { retries.maxHeld = value }
            retries.policy = try Self.parseRetryPolicy(&section, over: retries.policy)
            try section.finish()
        }
        if let value = try reader.int("maxInFlight", min: 1) { maxInFlight = value }
        if let value = try reader.int("maxBufferedRecords", min: 1) { maxBufferedRecords = value }
        if let value = try reader.int("maxPayloadBytes", min: 1) { maxPayloadBytes = value }
        if let value = try reader.int("defaultBudgetMs", min: 1) { defaultBudget = .milliseconds(value) }
        if let value = try reader.int("drainTimeoutMs", min: 0) { drainTimeout = .milliseconds(value) }
        if let value = try reader.int("rebalanceDrainTimeoutMs", min: 0) { rebalanceDrainTimeout = .milliseconds(value) }
        if var log = try reader.object("log") {
            if let value = try log.string("level") { logLevel = try Self.parseLevel(value, key: "log.level") }
            if let value = try log.string("format") { logFormat = try Self.parseFormat(value, key: "log.format") }
            if let value = try log.int("progressIntervalMs", min: 0, max: 2_147_483_647) { progressLogInterval = .milliseconds(value) }
            if let value = try log.int("unassignedWarningIntervalMs", min: 0, max: 2_147_483_647) { unassignedWarningInterval = .milliseconds(value) }
            try log.finish()
        }
        if var http = try reader.object("httpServer") {
            if let value = try http.bool("enabled") { httpServer.enabled = value }
            if let value = try http.string("host") { httpServer.host = value }
            if let value = try http.int("port", min: 0, max: 65_535) { httpServer.port = UInt16(clamping: value) }  // 0…65535: exact
            try http.finish()
        }
        if var section = try reader.object("statusPage") {
            if let value = try section.bool("enabled") { statusPage.enabled = value }
            if let value = try section.string("topic") { statusPage.topic = value }
            if let value = try section.int("publishIntervalMs", min: 100, max: 3_600_000) { statusPage.publishInterval = .milliseconds(value) }
            if let value = try section.int("sampleIntervalMs", min: 100, max: 3_600_000) { statusPage.sampleInterval = .milliseconds(value) }
            if let value = try section.int("samples", min: 2, max: 100_000) { statusPage.samples = value }
            if let value = try section.int("failures", min: 1, max: 10_000) { statusPage.failures = value }
            if let value = try section.string("dygraphsPath") { statusPage.dygraphsPath = value }
            try section.finish()
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
                self.workers[type] = try Self.parseWorker(&spec, environment: environment, secretVariables: &secretVariables, retryBase: retries.policy)
            }
            try workers.finish()
        }
        if var spec = try reader.object("defaultWorker") {
            defaultWorker = try Self.parseWorker(&spec, environment: environment, secretVariables: &secretVariables, retryBase: retries.policy)
        }
        if let value = reader.json(WorkerSettings.configKey) { workerSettings = try Self.parseWorkerSettings(value) }
        try reader.finish()
    }
}
