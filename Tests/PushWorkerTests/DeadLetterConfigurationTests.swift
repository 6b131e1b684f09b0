import Foundation
import PushWorkerCore
@testable import PushWorker
import Testing

/// `deadLetter` in the configuration file, `PUSHWORKER_DEAD_LETTER_TOPIC`, the checks made at startup,
/// check-config's output and which results are dead-lettered (``DeadLetterConfiguration/accepts(_:)``).
/// (Beside ``ConfigurationTests``, whose `load`/`error` helpers it uses.)
@Suite struct DeadLetterConfigurationTests {
    @Test func offByDefault() throws {
        #expect(try ConfigurationTests.load("{}").deadLetter == nil)
        #expect(try ConfigurationTests.load("{ deadLetter: null }").deadLetter == nil)
        #expect(try ConfigurationTests.load("{}", environment: ["PUSHWORKER_DEAD_LETTER_TOPIC": ""]).deadLetter == nil, "empty: as unset")
    }

    @Test func topicAloneDeadLettersEveryFailedResult() throws {
        let configuration = try ConfigurationTests.load(#"{ deadLetter: { topic: "dead" } }"#)
        #expect(configuration.deadLetter == DeadLetterConfiguration(topic: "dead"))
        #expect(configuration.deadLetter?.reasons == nil)
    }

    @Test func topicAndReasons() throws {
        let configuration = try ConfigurationTests.load(#"""
            { inputTopics: ["in"], resultsTopic: "out",
              deadLetter: { topic: "in-dead", reasons: ["workerError", "timeout", "myOwnReason"], }, }
            """#)
        #expect(configuration.deadLetter == DeadLetterConfiguration(topic: "in-dead", reasons: ["workerError", "timeout", "myOwnReason"]))
    }

    @Test func outputTopicsAreTheResultsTopicThenTheDeadLetterTopicThenTheRetryTopic() throws {
        #expect(try ConfigurationTests.load(#"{ resultsTopic: "out" }"#).outputTopics == ["out", "push-retries"])
        #expect(try ConfigurationTests.load(#"{ resultsTopic: "out", deadLetter: { topic: "in-dead" } }"#).outputTopics == ["out", "in-dead", "push-retries"])
        #expect(try ConfigurationTests.load(#"{ resultsTopic: "out", retries: { enabled: false } }"#).outputTopics == ["out"])
    }

    @Test func theEnvironmentTurnsItOnOrReplacesTheTopic() throws {
        let fromEnvironment = try ConfigurationTests.load("{}", environment: ["PUSHWORKER_DEAD_LETTER_TOPIC": "env-dead"])
        #expect(fromEnvironment.deadLetter == DeadLetterConfiguration(topic: "env-dead"))
        let replaced = try ConfigurationTests.load(#"{ deadLetter: { topic: "file-dead", reasons: ["timeout"] } }"#,
                                                   environment: ["PUSHWORKER_DEAD_LETTER_TOPIC": "env-dead"])
        #expect(replaced.deadLetter == DeadLetterConfiguration(topic: "env-dead", reasons: ["timeout"]), "the file's reasons stay")
        #expect(ServiceConfiguration.environmentOverrides.contains { $0.name == "PUSHWORKER_DEAD_LETTER_TOPIC" })
        // The environment's topic is checked like the file's.
        #expect(ConfigurationTests.error("{}", environment: ["PUSHWORKER_DEAD_LETTER_TOPIC": "pushes"])?.key == "deadLetter.topic")
    }

    @Test("bad dead-letter settings name the key", arguments: [
        (#"{ deadLetter: {} }"#, "deadLetter.topic", "is required"),
        (#"{ deadLetter: { reasons: ["timeout"] } }"#, "deadLetter.topic", "is required"),
        (#"{ deadLetter: { topic: null } }"#, "deadLetter.topic", "is required"),
        (#"{ deadLetter: { topic: "" } }"#, "deadLetter.topic", "must not be empty"),
        (#"{ deadLetter: { topic: 7 } }"#, "deadLetter.topic", "must be a string"),
        (#"{ deadLetter: { topic: "pushes" } }"#, "deadLetter.topic", "input topic"),
        (#"{ inputTopics: ["a", "b"], deadLetter: { topic: "b" } }"#, "deadLetter.topic", "input topic"),
        (#"{ deadLetter: { topic: "push-results" } }"#, "deadLetter.topic", "results topic"),
        (#"{ resultsTopic: "out", deadLetter: { topic: "out" } }"#, "deadLetter.topic", "results topic"),
        (#"{ deadLetter: { topic: "dead", reasons: [] } }"#, "deadLetter.reasons", "is empty"),
        (#"{ deadLetter: { topic: "dead", reasons: "timeout" } }"#, "deadLetter.reasons", "list of strings"),
        (#"{ deadLetter: { topic: "dead", reasons: [1] } }"#, "deadLetter.reasons", "list of strings"),
        (#"{ deadLetter: { topic: "dead", reason: ["timeout"] } }"#, "deadLetter.reason", "not a known key"),
        (#"{ deadLetter: { topic: "dead", topics: "x" } }"#, "deadLetter.topics", "not a known key"),
        (#"{ deadLetter: "dead" }"#, "deadLetter", "must be an object"),
        // Reasons that can never be those of a failed result: a typo or a misunderstanding.
        (#"{ deadLetter: { topic: "dead", reasons: ["timeout", ""] } }"#, "deadLetter.reasons", "empty reason"),
        (#"{ deadLetter: { topic: "dead", reasons: ["notSilent"] } }"#, "deadLetter.reasons", "not a reason of failed results"),
        (#"{ deadLetter: { topic: "dead", reasons: ["noData"] } }"#, "deadLetter.reasons", "not a reason of failed results"),
        (#"{ deadLetter: { topic: "dead", reasons: ["failed"] } }"#, "deadLetter.reasons", "workerError"),
        // Kafka refuses such names; found here rather than in production.
        (#"{ deadLetter: { topic: "bad topic/name" } }"#, "deadLetter.topic", "not a legal Kafka topic name"),
        (#"{ resultsTopic: "résultats" }"#, "resultsTopic", "not a legal Kafka topic name"),
        (#"{ inputTopics: ["ok", ".."] }"#, "inputTopics", "not a legal Kafka topic name"),
    ])
    func badSettingsAreNamed(_ text: String, _ key: String, _ message: String) {
        let error = ConfigurationTests.error(text)
        #expect(error?.key == key, "\(text): \(String(describing: error))")
        #expect(error?.description.contains(key) == true)
        #expect(error?.message.contains(message) == true, "\(text): \(error?.message ?? "no error")")
    }

    @Test func legalTopicNames() {
        for name in ["pushes", "push-results", "a.b_c-D9", String(repeating: "x", count: 249), "..."] {
            #expect(ServiceConfiguration.isLegalTopicName(name), "\(name)")
        }
        for name in ["", ".", "..", "a b", "a/b", "é", String(repeating: "x", count: 250)] {
            #expect(!ServiceConfiguration.isLegalTopicName(name), "\(name)")
        }
        // A pattern subscription is not a topic name.
        #expect(ConfigurationTests.error(#"{ inputTopics: ["^pushes-.*"] }"#) == nil)
        // A worker's own failed reason is accepted.
        #expect(ConfigurationTests.error(#"{ deadLetter: { topic: "dead", reasons: ["contentNotFound", "timeout"] } }"#) == nil)
    }

    @Test func checkConfigPrintsTheDeadLetterObject() throws {
        let on = try ConfigurationTests.load(#"{ deadLetter: { topic: "dead", reasons: ["timeout", "workerError"] } }"#).effectiveDescription()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(on.utf8)) as? [String: Any])
        let deadLetter = try #require(object["deadLetter"] as? [String: Any], "\(on)")
        #expect(deadLetter["topic"] as? String == "dead")
        #expect(deadLetter["reasons"] as? [String] == ["timeout", "workerError"])

        let allReasons = try ConfigurationTests.load(#"{ deadLetter: { topic: "dead" } }"#).effectiveDescription()
        let allObject = try #require(try JSONSerialization.jsonObject(with: Data(allReasons.utf8)) as? [String: Any])
        let all = try #require(allObject["deadLetter"] as? [String: Any], "\(allReasons)")
        #expect(all["topic"] as? String == "dead")
        #expect(all["reasons"] is NSNull, "null: every failed reason")

        let off = try ConfigurationTests.load("{}").effectiveDescription()
        let offObject = try #require(try JSONSerialization.jsonObject(with: Data(off.utf8)) as? [String: Any])
        #expect(offObject["deadLetter"] is NSNull, "off is shown as null")
    }

    static func result(_ outcome: BackgroundFetchResult, _ reason: String?) -> ResultRecord {
        ResultRecord(messageId: "m", type: "t", result: outcome, reason: reason.map { ResultReason($0) }, detail: nil, worker: nil,
                     source: RecordSource(topic: "pushes", partition: 0, offset: 1), receivedAtMs: 0, startedAtMs: nil,
                     finishedAtMs: 0, durationMs: 0)
    }

    @Test func acceptsOnlyFailedResultsWithAListedReason() {
        let every = DeadLetterConfiguration(topic: "dead")
        let listed = DeadLetterConfiguration(topic: "dead", reasons: ["timeout", "myOwnReason"])
        let cases: [(BackgroundFetchResult, String?, every: Bool, listed: Bool)] = [
            (.newData, nil, false, false),
            (.noData, nil, false, false),
            (.noData, "noWorker", false, false),
            (.noData, "timeout", false, false),          // a listed reason, but not failed
            (.failed, "timeout", true, true),
            (.failed, "myOwnReason", true, true),        // a worker-defined reason
            (.failed, "workerError", true, false),
            (.failed, "invalidPayload", true, false),
            (.failed, "Timeout", true, false),           // reasons are case-sensitive
            (.failed, nil, true, false),                 // failed without a reason
        ]
        for (outcome, reason, everyExpected, listedExpected) in cases {
            let result = Self.result(outcome, reason)
            #expect(every.accepts(result) == everyExpected, "\(outcome)/\(reason ?? "-") with reasons nil")
            #expect(listed.accepts(result) == listedExpected, "\(outcome)/\(reason ?? "-") with reasons listed")
        }
    }
}
