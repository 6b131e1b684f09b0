import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Testing

/// The JSON5 configuration file, environment overrides and the checks made at startup.
@Suite struct ConfigurationTests {
    static func load(_ text: String, environment: [String: String] = [:]) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: environment)
    }

    static func error(_ text: String, environment: [String: String] = [:]) -> ConfigurationError? {
        do {
            _ = try load(text, environment: environment)
            return nil
        } catch let error as ConfigurationError {
            return error
        } catch {
            return nil
        }
    }

    @Test func defaultsFollowTheContract() throws {
        let configuration = try Self.load("{}")
        #expect(configuration.inputTopics == ["pushes"])
        #expect(configuration.resultsTopic == "push-results")
        #expect(configuration.groupId == "pushworker")
        #expect(configuration.defaultBudget == .milliseconds(30_000))
        #expect(configuration.maxPayloadBytes == 4096)
        #expect(configuration.consumerProperties["enable.auto.offset.store"] == "false")
        #expect(configuration.consumerProperties["group.id"] == "pushworker")
        #expect(configuration.producerProperties["enable.idempotence"] == "true")
        // librdkafka's own defaults are not re-sent.
        #expect(configuration.consumerProperties["session.timeout.ms"] == nil)
        #expect(configuration.producerProperties["linger.ms"] == nil)
    }

    @Test func theExampleConfigurationLoads() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let configuration = try ServiceConfiguration.load(path: path.appendingPathComponent("config/pushworker.json5").path, environment: [:])
        #expect(configuration.workers["content-update"]?.kindName == "exec")
        #expect(configuration.workers["slow"]?.budget == .milliseconds(2000))
        #expect(configuration.deadLetter == DeadLetterConfiguration(topic: "push-dead-letters"))
        #expect(configuration.makeRegistry().route(type: "ping")?.name == "noop:ping")
        #expect(configuration.httpServer == HTTPServerConfiguration(enabled: true, host: "0.0.0.0", port: 9400))
    }

    @Test func json5WithCommentsAndPassThroughProperties() throws {
        let configuration = try Self.load("""
            // comment
            {
              kafka: { "bootstrap.servers": "broker-1:9092,broker-2:9092", "socket.keepalive.enable": true, "linger.ms": 10, },
              consumer: { "session.timeout.ms": 10000 },
              groupId: "workers", inputTopics: ["a", "b"], resultsTopic: "out",
              maxInFlight: 8, defaultBudgetMs: 5000,
              workers: { ping: { kind: "noop", result: "newData", reason: "pong", delayMs: 5, maxConcurrent: 2 } },
              defaultWorker: { kind: "noop", budgetMs: 100 },
              log: { level: "debug", format: "json" },
            }
            """)
        #expect(configuration.bootstrapServers == "broker-1:9092,broker-2:9092")
        #expect(configuration.consumerProperties["socket.keepalive.enable"] == "true")
        #expect(configuration.producerProperties["linger.ms"] == "10")
        #expect(configuration.consumerProperties["session.timeout.ms"] == "10000")
        #expect(configuration.producerProperties["session.timeout.ms"] == nil)
        #expect(configuration.inputTopics == ["a", "b"])
        #expect(configuration.logLevel == .debug && configuration.logFormat == .json)
        let registry = configuration.makeRegistry()
        #expect(registry.route(type: "ping")?.budget == .milliseconds(5000))
        #expect(registry.route(type: "ping")?.maxConcurrent == 2)
        #expect(registry.route(type: "other")?.maxConcurrent == nil)
        #expect(registry.route(type: "other")?.name == "noop:default")
        #expect(registry.route(type: "other")?.budget == .milliseconds(100))
        #expect(configuration.effectiveDrainTimeout == .milliseconds(15_000))
    }

    @Test func environmentOverridesTheFile() throws {
        let configuration = try Self.load(#"{ kafka: { "bootstrap.servers": "file:9092" }, groupId: "from-file" }"#, environment: [
            "PUSHWORKER_BOOTSTRAP_SERVERS": "env:9092", "PUSHWORKER_GROUP_ID": "from-env",
            "PUSHWORKER_INPUT_TOPICS": "x, y", "PUSHWORKER_RESULTS_TOPIC": "r", "PUSHWORKER_MAX_IN_FLIGHT": "3",
            "PUSHWORKER_LOG_LEVEL": "warning",
        ])
        #expect(configuration.bootstrapServers == "env:9092")
        #expect(configuration.groupId == "from-env")
        #expect(configuration.inputTopics == ["x", "y"])
        #expect(configuration.resultsTopic == "r")
        #expect(configuration.maxInFlight == 3)
        #expect(configuration.logLevel == .warning)
    }

    @Test("bad configurations name the key", arguments: [
        (#"{ grupId: "x" }"#, "grupId"),
        (#"{ workers: { ping: { kind: "noop", delay: 5 } } }"#, "workers.ping.delay"),
        (#"{ workers: { ping: { kind: "smtp" } } }"#, "workers.ping.kind"),
        (#"{ workers: { ping: { kind: "http" } } }"#, "workers.ping.url"),
        (#"{ workers: { ping: { kind: "http", url: "ftp://x/y" } } }"#, "workers.ping.url"),
        (#"{ workers: { ping: { kind: "http", url: "http://x/y", headersFromEnv: { Authorization: "NO_SUCH_VARIABLE_X" } } } }"#, "workers.ping.headersFromEnv.Authorization"),
        (#"{ workers: { job: { kind: "exec" } } }"#, "workers.job.command"),
        (#"{ workers: { job: { kind: "exec", comand: ["/bin/true"] } } }"#, "workers.job.comand"),
        (#"{ workers: { hook: { kind: "http", url: "http://x/y", timeout: 5 } } }"#, "workers.hook.timeout"),
        (#"{ workers: { job: { kind: "exec", command: ["/no/such/program"] } } }"#, "workers.job.command"),
        (#"{ maxInFlight: 0 }"#, "maxInFlight"),
        (#"{ workers: { ping: { kind: "noop", maxConcurrent: 0 } } }"#, "workers.ping.maxConcurrent"),
        (#"{ maxInFlight: "many" }"#, "maxInFlight"),
        (#"{ inputTopics: "pushes" }"#, "inputTopics"),
        (#"{ resultsTopic: "pushes" }"#, "resultsTopic"),
        (#"{ log: { level: "loud" } }"#, "log.level"),
        (#"{ consumer: { "enable.auto.offset.store": true } }"#, "consumer.enable.auto.offset.store"),
        (#"{ httpServer: { port: 70000 } }"#, "httpServer.port"),
        (#"{ httpServer: { port: -1 } }"#, "httpServer.port"),
        (#"{ httpServer: { port: "9400" } }"#, "httpServer.port"),
        (#"{ httpServer: { enabled: "yes" } }"#, "httpServer.enabled"),
        (#"{ httpServer: { hots: "0.0.0.0" } }"#, "httpServer.hots"),
        (#"{ httpServer: { host: "no-such-host.invalid" } }"#, "httpServer.host"),
        (#"{ httpServer: { host: "" } }"#, "httpServer.host"),
    ])
    func badKeysAreNamed(_ text: String, _ key: String) {
        let error = Self.error(text)
        #expect(error?.key == key, "\(text)")
        #expect(error?.description.contains(key) == true)
    }

    @Test func messagesSayWhatIsWrong() {
        #expect(Self.error(#"{ workers: { h: { kind: "http", url: "ftp://x/y" } } }"#)?.message.contains("got 'ftp://x/y'") == true)
        #expect(Self.error(#"{ workers: { h: { kind: "http", url: "http://x/y", headersFromEnv: { A: "EMPTY_ONE" } } } }"#,
                           environment: ["EMPTY_ONE": ""])?.message.contains("is empty") == true)
        #expect(Self.error(#"{ workers: { j: { kind: "exec", comand: ["/bin/true"] } } }"#)?.message.contains("command") == true,
                "the message lists the known keys")
        #expect(Self.error(#"{ workers: { j: { kind: "exec", command: ["no-such-dir/worker.sh"] } } }"#)?.message
                    .contains("relative to the working directory") == true)
    }

    @Test func httpServerDefaultsFileAndEnvironment() throws {
        let defaults = try Self.load("{}")
        #expect(defaults.httpServer == HTTPServerConfiguration(enabled: true, host: "0.0.0.0", port: 9400))
        // Statistics feed the metrics and readiness: on every 5 s when the server is, unless the user set them.
        #expect(defaults.consumerProperties["statistics.interval.ms"] == "5000")
        #expect(defaults.producerProperties["statistics.interval.ms"] == "5000")
        let own = try Self.load(#"{ kafka: { "statistics.interval.ms": 1000 }, producer: { "statistics.interval.ms": 0 } }"#)
        #expect(own.consumerProperties["statistics.interval.ms"] == "1000")
        #expect(own.producerProperties["statistics.interval.ms"] == "0")

        let file = try Self.load(#"{ httpServer: { enabled: false, host: "127.0.0.1", port: 0 } }"#)
        #expect(file.httpServer == HTTPServerConfiguration(enabled: false, host: "127.0.0.1", port: 0))
        #expect(file.consumerProperties["statistics.interval.ms"] == nil, "no statistics without the server")
        #expect(try Self.load(#"{ httpServer: { host: "::1", port: 65535 } }"#).httpServer.port == 65535)
        #expect(try Self.load(#"{ httpServer: { host: "localhost" } }"#).httpServer.host == "localhost")
        // A bad host does not matter while the server is off.
        #expect(try Self.load(#"{ httpServer: { enabled: false, host: "no-such-host.invalid" } }"#).httpServer.enabled == false)

        let environment = try Self.load(#"{ httpServer: { enabled: false } }"#, environment: [
            "PUSHWORKER_HTTP_ENABLED": "true", "PUSHWORKER_HTTP_HOST": "127.0.0.1", "PUSHWORKER_HTTP_PORT": "0",
        ])
        #expect(environment.httpServer == HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0))
        #expect(try Self.load("{}", environment: ["PUSHWORKER_HTTP_ENABLED": "FALSE"]).httpServer.enabled == false)
        #expect(Self.error("{}", environment: ["PUSHWORKER_HTTP_PORT": "65536"])?.key == "PUSHWORKER_HTTP_PORT")
        #expect(Self.error("{}", environment: ["PUSHWORKER_HTTP_PORT": "ninety"])?.key == "PUSHWORKER_HTTP_PORT")
        #expect(Self.error("{}", environment: ["PUSHWORKER_HTTP_ENABLED": "maybe"])?.key == "PUSHWORKER_HTTP_ENABLED")
        #expect(Self.error("{}", environment: ["PUSHWORKER_HTTP_HOST": "no-such-host.invalid"])?.key == "httpServer.host")

        let text = file.effectiveDescription()
        #expect(text.contains(#""httpServer" : {"#))
        #expect(text.contains(#""port" : 0"#))
    }

    @Test func librdkafkaRefusesUnknownProperties() {
        let error = Self.error(#"{ kafka: { "bootstrap.servers": "x:1", "sasl.mechanism": "PLAIN", "no.such.property": 1 } }"#)
        #expect(error?.code == .kafkaProperty)
        #expect(error?.message.contains("no.such.property") == true)
    }

    @Test func syntaxErrorsAreReported() {
        #expect(Self.error("{ groupId: ")?.code == .syntax)
        #expect(Self.error("[1, 2]")?.code == .invalidValue)
        #expect(Self.error("{}", environment: ["PUSHWORKER_MAX_IN_FLIGHT": "lots"])?.key == "PUSHWORKER_MAX_IN_FLIGHT")
    }

    /// Foundation's JSON5 scanner traps on this input (found by Fuzz/FuzzConfiguration): a file that is not
    /// UTF-8 is a syntax error naming the offset, not a crash.
    @Test func aFileThatIsNotUTF8IsASyntaxError() {
        var configuration = ServiceConfiguration()
        #expect {
            try configuration.apply(json5: Data([0x7B] + [UInt8](repeating: 0xFF, count: 8)), file: "bad.json5", environment: [:])
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.code == .syntax && error?.message.contains("bad.json5") == true && error?.message.contains("offset 1") == true
        }
        #expect(Self.error("{ groupId: \"caf\u{E9}\" }") == nil)
    }

    @Test func secretsAreMaskedInTheEffectiveConfiguration() throws {
        let configuration = try Self.load(#"""
            { kafka: { "bootstrap.servers": "x:1", "sasl.password": "hunter2", "ssl.key.password": "s3cret" },
              workers: { job: { kind: "exec", command: ["/bin/true"], env: { API_TOKEN: "t0ken" } } } }
            """#)
        let text = configuration.effectiveDescription()
        #expect(!text.contains("hunter2") && !text.contains("s3cret") && !text.contains("t0ken"))
        #expect(text.contains("\"sasl.password\" : \"*****\""))
        #expect(text.contains("\"bootstrap.servers\" : \"x:1\""))
    }

    @Test func librdkafkaPropertiesAndStaticMembershipFromTheEnvironment() throws {
        let configuration = try Self.load(#"{ kafka: { "bootstrap.servers": "x:1", "security.protocol": "SASL_SSL" } }"#, environment: [
            "PUSHWORKER_KAFKA_SASL_MECHANISMS": "SCRAM-SHA-512",
            "PUSHWORKER_KAFKA_SASL_USERNAME": "pushworker",
            "PUSHWORKER_KAFKA_SASL_PASSWORD": "from-a-secret",
            "PUSHWORKER_GROUP_INSTANCE_ID": "pushworker-0",
            "PUSHWORKER_KAFKA_SSL_KEY_PASSWORD": "",  // empty: ignored, as an unset variable
        ])
        #expect(configuration.kafka["ssl.key.password"] == nil)
        #expect(configuration.kafka["sasl.mechanisms"] == "SCRAM-SHA-512")
        #expect(configuration.kafka["sasl.password"] == "from-a-secret")
        #expect(configuration.consumerProperties["group.instance.id"] == "pushworker-0")
        #expect(configuration.producerProperties["group.instance.id"] == nil, "a consumer property, not sent to the producer")
        #expect(!configuration.effectiveDescription().contains("from-a-secret"))
        #expect(ServiceConfiguration.kafkaProperty(forEnvironmentVariable: "PUSHWORKER_KAFKA_SSL_CA_LOCATION") == "ssl.ca.location")
        #expect(ServiceConfiguration.kafkaProperty(forEnvironmentVariable: "PUSHWORKER_GROUP_ID") == nil)

        // The environment also wins where the file set the property for one client only.
        let sectioned = try Self.load(#"{ consumer: { "session.timeout.ms": 6000 } }"#, environment: ["PUSHWORKER_KAFKA_SESSION_TIMEOUT_MS": "45000"])
        #expect(sectioned.consumerProperties["session.timeout.ms"] == "45000")

        let unknown = Self.error("{}", environment: ["PUSHWORKER_KAFKA_NO_SUCH_THING": "1"])
        #expect(unknown?.key == "PUSHWORKER_KAFKA_NO_SUCH_THING")
        #expect(unknown?.message.contains("no.such.thing") == true)
    }

    @Test func drainsWaitForTheLargestBudgetIncludingSwiftWorkers() throws {
        let configuration = try Self.load(#"{ defaultBudgetMs: 1000, workers: { ping: { kind: "noop", budgetMs: 5000 } } }"#)
        var registry = configuration.makeRegistry()
        #expect(configuration.effectiveDrainTimeout(for: registry) == .milliseconds(15_000))
        registry.register(type: "greeting", worker: ClosureWorker { _ in .newData }, name: "swift:greeting", budget: .seconds(120), maxConcurrent: 4)
        #expect(configuration.effectiveDrainTimeout(for: registry) == .milliseconds(130_000), "a Swift worker's running job can finish")
        let text = configuration.effectiveDescription(registry: registry)
        #expect(text.contains(#""drainTimeoutMs" : 130000"#))
        #expect(text.contains(#""swiftWorkers" : {"#) && text.contains(#""worker" : "swift:greeting""#))
        #expect(!text.contains(#""worker" : "noop:ping""#), "configured workers are not listed as Swift workers")
        let explicit = try Self.load(#"{ drainTimeoutMs: 3000 }"#)
        #expect(explicit.effectiveDrainTimeout(for: registry) == .milliseconds(3000), "an explicit drainTimeoutMs wins")
    }

    @Test func rebalanceDrainTimeoutIsTheDrainTimeoutButAtMostTenSecondsUnlessSet() throws {
        let registry = WorkerRegistry()
        // Default budget 30 s: drains wait 40 s, a revocation 10 s.
        let defaults = try Self.load("{}")
        #expect(defaults.effectiveDrainTimeout(for: registry) == .seconds(40))
        #expect(defaults.effectiveRebalanceDrainTimeout(for: registry) == .seconds(10))
        #expect(defaults.effectiveDescription(registry: registry).contains(#""rebalanceDrainTimeoutMs" : 10000,"#))
        // A short drain timeout bounds revocations too (files written before the key existed keep it).
        let short = try Self.load(#"{ drainTimeoutMs: 3000 }"#)
        #expect(short.effectiveRebalanceDrainTimeout(for: registry) == .milliseconds(3000))
        let explicit = try Self.load(#"{ drainTimeoutMs: 3000, rebalanceDrainTimeoutMs: 25000 }"#)
        #expect(explicit.rebalanceDrainTimeout == .milliseconds(25_000))
        #expect(explicit.effectiveRebalanceDrainTimeout(for: registry) == .milliseconds(25_000), "an explicit rebalanceDrainTimeoutMs wins")
        #expect(Self.error(#"{ rebalanceDrainTimeoutMs: -1 }"#)?.key == "rebalanceDrainTimeoutMs")
    }

    @Test func tlsFilesThatDoNotExistAreRefusedAtStartup() throws {
        let missing = Self.error(#"{ kafka: { "security.protocol": "SSL", "ssl.ca.location": "/etc/pushworker/no-such-ca.pem" } }"#)
        #expect(missing?.key == "kafka.ssl.ca.location")
        #expect(missing?.message.contains("/etc/pushworker/no-such-ca.pem") == true)
        #expect(missing?.message.contains("does not exist") == true)
        let key = Self.error(#"{ consumer: { "ssl.key.location": "/nope/client.key" } }"#)
        #expect(key?.key == "consumer.ssl.key.location")
        let fromEnvironment = Self.error("{}", environment: ["PUSHWORKER_KAFKA_SSL_CERTIFICATE_LOCATION": "/nope/client.pem"])
        #expect(fromEnvironment?.key == "kafka.ssl.certificate.location")
        let directory = Self.error(#"{ kafka: { "ssl.key.location": "/tmp" } }"#)
        #expect(directory?.message.contains("directory") == true)

        // A file that exists but is no certificate is refused too: librdkafka loads it as run would.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-ca-\(UUID().uuidString.prefix(6)).pem")
        try "-----BEGIN CERTIFICATE-----\nnot a certificate\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let garbage = Self.error(#"{ kafka: { "security.protocol": "SSL", "ssl.ca.location": "\#(file.path)" } }"#)
        #expect(garbage?.key == "kafka/consumer")
        #expect(garbage?.message.contains("ssl.ca.location") == true, "\(garbage?.message ?? "-")")
        // Real CA files pass, and `probe` asks librdkafka to search the system's CA locations.
        let system = "/etc/ssl/certs/ca-certificates.crt"
        if FileManager.default.fileExists(atPath: system) {
            _ = try Self.load(#"{ kafka: { "security.protocol": "SSL", "ssl.ca.location": "\#(system)" } }"#)
        }
        _ = try Self.load(#"{ kafka: { "security.protocol": "SSL", "ssl.ca.location": "probe" } }"#)
    }

    @Test func httpWorkersTakeSecretsFromTheEnvironmentAndMaskThem() throws {
        let configuration = try Self.load(#"""
            { workers: { refresh: { kind: "http", url: "https://api.example.com/refresh", timeoutMs: 2000,
                                    headers: { "X-Team": "push" }, headersFromEnv: { Authorization: "REFRESH_TOKEN" } } } }
            """#, environment: ["REFRESH_TOKEN": "Bearer t0ken"])
        guard case .http(let url, let headers, let requestTimeout)? = configuration.workers["refresh"]?.kind else {
            Issue.record("not an http worker"); return
        }
        #expect(url.absoluteString == "https://api.example.com/refresh")
        #expect(headers == ["X-Team": "push", "Authorization": "Bearer t0ken"])
        #expect(requestTimeout == .milliseconds(2000))
        #expect(configuration.makeRegistry().route(type: "refresh")?.name == "http:refresh")
        let text = configuration.effectiveDescription()
        #expect(!text.contains("t0ken"))
        #expect(text.contains("https://api.example.com/refresh"))
    }
}
