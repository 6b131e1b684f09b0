import Foundation
import PushWorkerCore
@testable import PushWorker
import Testing

/// The `retries` section and `workers.<type>.retry` of the configuration file.
@Suite struct RetryConfigurationTests {
    @Test func defaultsAreOnThroughPushRetriesWithTheStandardPolicy() throws {
        let configuration = try ConfigurationTests.load("{}")
        #expect(configuration.retries.enabled)
        #expect(configuration.retries.topic == "push-retries")
        #expect(configuration.retries.policy == .standard)
        #expect(configuration.retries.maxHold == .seconds(15) && configuration.retries.maxHeld == 10_000)
        #expect(configuration.subscribedTopics == ["pushes", "push-retries"])
        #expect(configuration.retries.delaySettings.retryTopic == "push-retries")
        let off = try ConfigurationTests.load("{ retries: { enabled: false } }")
        #expect(off.subscribedTopics == ["pushes"] && off.retries.delaySettings.retryTopic == nil)
    }

    @Test func theSectionSetsThePolicyAndAWorkersRetryOverridesItKeyByKey() throws {
        let configuration = try ConfigurationTests.load("""
            { retries: { topic: "my-retries", maxAttempts: 5, initialDelayMs: 250, multiplier: 1.5, maxDelayMs: 9000, jitter: 0,
                         retryTimeouts: true, maxHoldMs: 2000, maxHeld: 7 },
              workers: { "a": { kind: "noop", retry: { maxAttempts: 2 } }, "b": { kind: "noop" } } }
            """)
        let expected = RetryPolicy(maxAttempts: 5, initialDelay: .milliseconds(250), multiplier: 1.5, maxDelay: .seconds(9), jitter: 0, retriesTimeouts: true)
        #expect(configuration.retries.policy == expected)
        #expect(configuration.retries.topic == "my-retries" && configuration.retries.maxHold == .seconds(2) && configuration.retries.maxHeld == 7)
        var own = expected
        own.maxAttempts = 2
        #expect(configuration.workers["a"]?.retry == own, "keys left out come from retries")
        #expect(configuration.workers["b"]?.retry == nil)
        let registry = configuration.makeRegistry()
        #expect(registry.route(type: "a")?.retry == own)
        #expect(registry.route(type: "b")?.retry == nil, "the dispatcher uses retries.policy")
    }

    @Test func aNoopWorkerCanFailRetryably() throws {
        let configuration = try ConfigurationTests.load(#"{ workers: { n: { kind: "noop", result: "failed", reason: "down", retryable: true } } }"#)
        let worker = try #require(configuration.makeRegistry().route(type: "n")?.worker as? NoopWorker)
        #expect(worker.outcome == .failed("down", retryable: true))
    }

    @Test("bad retry settings name the key", arguments: [
        (#"{ retries: { jitter: 1.5 } }"#, "retries.jitter"),
        (#"{ retries: { multiplier: 0.5 } }"#, "retries.multiplier"),
        (#"{ retries: { maxAttempts: 0 } }"#, "retries.maxAttempts"),
        (#"{ retries: { initialDelayMs: 5000, maxDelayMs: 1000 } }"#, "retries.maxDelayMs"),
        (#"{ retries: { backoff: 3 } }"#, "retries.backoff"),
        (#"{ retries: { topic: "pushes" } }"#, "retries.topic"),
        (#"{ retries: { topic: "push-results" } }"#, "retries.topic"),
        (#"{ retries: { topic: "bad topic" } }"#, "retries.topic"),
        (#"{ retries: { topic: "" } }"#, "retries.topic"),
        (#"{ deadLetter: { topic: "d" }, retries: { topic: "d" } }"#, "retries.topic"),
        (#"{ workers: { a: { kind: "noop", retry: { jitter: -1 } } } }"#, "workers.a.retry.jitter"),
        (#"{ workers: { a: { kind: "noop", retry: { delayMs: 1 } } } }"#, "workers.a.retry.delayMs"),
        (#"{ workers: { a: { kind: "noop", result: "newData", retryable: true } } }"#, "workers.a.retryable"),
    ])
    func badSettings(_ text: String, _ key: String) throws {
        let error = ConfigurationTests.error(text) ?? (try? ConfigurationTests.load(text)).flatMap { configuration in
            do { try configuration.check(); return nil } catch let error as ConfigurationError { return error } catch { return nil }
        }
        #expect(error?.key == key, "\(text): \(error.map { "\($0)" } ?? "accepted")")
    }
}
