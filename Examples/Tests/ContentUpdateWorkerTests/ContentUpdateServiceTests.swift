import ContentUpdateWorker
import Foundation
import PushWorkerCore
import PushWorkerTesting
import Testing

/// The worker inside the real pushworker service on an embedded Kafka cluster (`PushWorkerTestHarness`).
@Suite(.timeLimit(.minutes(2)))
struct ContentUpdateServiceTests {
    @Test func everyOutcomeReachesTheResultsTopicAndOffsetsAreCommitted() async throws {
        let server = try ContentServer(["article-1": "fresh", "article-2": "fresh too"])
        var registry = WorkerRegistry()
        registry.register(type: "content-update", worker: ContentUpdateWorker(baseURL: server.baseURL), budget: .seconds(5))
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1)

        // One key, so the records run in order on one partition.
        let payloads = [
            #"{"aps":{"content-available":1},"type":"content-update","contentId":"article-1"}"#,
            #"{"aps":{"content-available":1},"type":"content-update","contentId":"article-1"}"#,
            #"{"aps":{"content-available":1},"type":"content-update"}"#,
            #"{"aps":{"content-available":1},"type":"content-update","contentId":"missing"}"#,
            #"{"aps":{"content-available":1},"type":"content-update","contentId":"article-2"}"#,
        ]
        for (index, payload) in payloads.enumerated() {
            try await harness.produce(payload, key: "device-1", headers: ["apns-id": "msg-\(index)"])
        }
        let results = try await harness.results(count: payloads.count)
        let byId = Dictionary(uniqueKeysWithValues: results.map { ($0.messageId ?? "", $0) })
        #expect(byId["msg-0"]?.result == "newData")
        #expect(byId["msg-1"]?.result == "noData")
        #expect(byId["msg-1"]?.reason == "unchanged")
        #expect(byId["msg-2"]?.reason == "noContentId")
        #expect(byId["msg-3"]?.result == "failed")
        #expect(byId["msg-3"]?.reason == "contentNotFound")
        #expect(byId["msg-4"]?.result == "newData")
        #expect(results.allSatisfy { $0.json["worker"]?.stringValue == "content-update" })

        // Committed only once the results are delivered: the next offset after the last record.
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        var committed = try await harness.committedOffsets()
        while committed[0] != Int64(payloads.count), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            committed = try await harness.committedOffsets()
        }
        #expect(committed[0] == Int64(payloads.count))
        try await harness.shutdown()
    }
}
