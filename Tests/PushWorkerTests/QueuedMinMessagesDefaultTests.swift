import Foundation
import PushWorker
import Testing

/// The consumer's prefetch: pushworker's `queued.min.messages` default (40 000, librdkafka's own 100 000),
/// and the user's setting over it from the file's `consumer` or `kafka` properties or the environment.
struct QueuedMinMessagesDefaultTests {
    @Test func theConsumerPrefetches40000RecordsUnlessTheUserSaysOtherwise() throws {
        let defaults = try ServiceConfiguration.load(json5: Data("{}".utf8), environment: [:])
        #expect(defaults.consumerProperties["queued.min.messages"] == "40000")
        #expect(defaults.producerProperties["queued.min.messages"] == nil, "a consumer property only")
        let own = try ServiceConfiguration.load(json5: Data(#"{ consumer: { "queued.min.messages": 100000 } }"#.utf8), environment: [:])
        #expect(own.consumerProperties["queued.min.messages"] == "100000")
        let shared = try ServiceConfiguration.load(json5: Data(#"{ kafka: { "queued.min.messages": 5000 } }"#.utf8), environment: [:])
        #expect(shared.consumerProperties["queued.min.messages"] == "5000")
        let environment = try ServiceConfiguration.load(json5: Data("{}".utf8), environment: ["PUSHWORKER_KAFKA_QUEUED_MIN_MESSAGES": "20000"])
        #expect(environment.consumerProperties["queued.min.messages"] == "20000")
    }
}
