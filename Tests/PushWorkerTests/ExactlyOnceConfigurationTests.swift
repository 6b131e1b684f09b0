import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import Testing

/// The `exactlyOnce` configuration key: defaults, parsing, environment, the librdkafka properties it sets,
/// refusals, and check-config's output.
@Suite struct ExactlyOnceConfigurationTests {
    static func load(_ text: String, environment: [String: String] = [:]) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: environment)
    }

    static func errorKey(_ text: String, environment: [String: String] = [:]) -> String? {
        do {
            _ = try load(text, environment: environment)
            return nil
        } catch let error as ConfigurationError {
            return error.key
        } catch {
            return nil
        }
    }

    @Test func offByDefaultAndAtLeastOnceProperties() throws {
        let configuration = try Self.load("{}")
        #expect(configuration.exactlyOnce == ExactlyOnceConfiguration())
        #expect(!configuration.exactlyOnce.enabled)
        #expect(configuration.exactlyOnce.commitInterval == .milliseconds(100))
        #expect(configuration.exactlyOnce.maxRecordsPerTransaction == 5000)
        #expect(configuration.producerProperties["transactional.id"] == nil)
        #expect(configuration.producerProperties["enable.idempotence"] == "true")
        #expect(configuration.consumerProperties["enable.auto.commit"] == nil)
        #expect(configuration.consumerProperties["auto.commit.interval.ms"] == "200")
        let text = configuration.effectiveDescription()
        #expect(text.contains(#""exactlyOnce" : {"#) && text.contains(#""enabled" : false"#) && text.contains(#""transactionalId" : null"#), "\(text)")
    }

    @Test func theKeysAreReadAndSetTheProperties() throws {
        let configuration = try Self.load("{ groupId: 'g1', exactlyOnce: { enabled: true, transactionalId: 'member-a', commitIntervalMs: 250, maxRecordsPerTransaction: 100 } }")
        #expect(configuration.exactlyOnce == ExactlyOnceConfiguration(enabled: true, transactionalId: "member-a", commitInterval: .milliseconds(250), maxRecordsPerTransaction: 100))
        #expect(configuration.producerProperties["transactional.id"] == "member-a")
        // Not re-sent: a transactional producer is idempotent by librdkafka's own doing.
        #expect(configuration.producerProperties["enable.idempotence"] == nil)
        // The group's offsets come only from the transactions.
        #expect(configuration.consumerProperties["enable.auto.commit"] == "false")
        #expect(configuration.consumerProperties["auto.commit.interval.ms"] == nil)
        // librdkafka's default isolation.level is read_committed: not re-sent.
        #expect(configuration.consumerProperties["isolation.level"] == nil)
        let text = configuration.effectiveDescription()
        #expect(text.contains(#""transactionalId" : "member-a""#) && text.contains(#""commitIntervalMs" : 250"#) && text.contains(#""maxRecordsPerTransaction" : 100"#), "\(text)")
        // redrive produces outside transactions.
        #expect(configuration.nonTransactionalProducerProperties["transactional.id"] == nil)
        #expect(configuration.nonTransactionalProducerProperties["enable.idempotence"] == "true")
        // A user's enable.auto.commit=true cannot put plain commits beside the transactions.
        let forced = try Self.load("{ consumer: { 'enable.auto.commit': 'true' }, exactlyOnce: { enabled: true } }")
        #expect(forced.consumerProperties["enable.auto.commit"] == "false")
    }

    @Test func theDefaultTransactionalIdIsTheGroupAndTheHost() throws {
        let configuration = try Self.load("{ groupId: 'workers', exactlyOnce: { enabled: true } }")
        #expect(configuration.exactlyOnce.effectiveTransactionalId(groupId: "workers", hostName: "pod-3") == "workers-pod-3")
        #expect(configuration.producerProperties["transactional.id"] == "workers-\(ProcessInfo.processInfo.hostName)")
        #expect(configuration.effectiveDescription().contains(#""transactionalId" : "workers-\#(ProcessInfo.processInfo.hostName)""#))
    }

    @Test func theEnvironmentOverridesTheFile() throws {
        let configuration = try Self.load("{ exactlyOnce: { enabled: false, transactionalId: 'file' } }",
                                          environment: ["PUSHWORKER_EXACTLY_ONCE": "true", "PUSHWORKER_TRANSACTIONAL_ID": "pod-7"])
        #expect(configuration.exactlyOnce.enabled && configuration.exactlyOnce.transactionalId == "pod-7")
        #expect(try !Self.load("{ exactlyOnce: { enabled: true } }", environment: ["PUSHWORKER_EXACTLY_ONCE": "no"]).exactlyOnce.enabled)
        #expect(Self.errorKey("{}", environment: ["PUSHWORKER_EXACTLY_ONCE": "maybe"]) == "PUSHWORKER_EXACTLY_ONCE")
        #expect(ServiceConfiguration.environmentOverrides.contains { $0.name == "PUSHWORKER_TRANSACTIONAL_ID" })
    }

    @Test func badValuesAreRefused() {
        #expect(Self.errorKey("{ exactlyOnce: { enabled: 'yes' } }") == "exactlyOnce.enabled")
        #expect(Self.errorKey("{ exactlyOnce: { transactionalId: '' } }") == "exactlyOnce.transactionalId")
        #expect(Self.errorKey("{ exactlyOnce: { commitIntervalMs: 0 } }") == "exactlyOnce.commitIntervalMs")
        #expect(Self.errorKey("{ exactlyOnce: { maxRecordsPerTransaction: 0 } }") == "exactlyOnce.maxRecordsPerTransaction")
        #expect(Self.errorKey("{ exactlyOnce: { enable: true } }") == "exactlyOnce.enable")
        // A transactional.id without the mode would make every produce fail (_STATE).
        #expect(Self.errorKey("{ producer: { 'transactional.id': 'x' } }") == "producer.transactional.id")
        // read_uncommitted would run input records of aborted upstream transactions.
        #expect(Self.errorKey("{ consumer: { 'isolation.level': 'read_uncommitted' }, exactlyOnce: { enabled: true } }") == "consumer.isolation.level")
        #expect(Self.errorKey("{ consumer: { 'isolation.level': 'read_uncommitted' } }") == nil)
    }
}
