import ContentUpdateWorker
import Foundation
import PushWorkerCore
import PushWorker
import PushWorkerTesting
import Testing

/// The worker inside the real pushworker service on an embedded Kafka cluster (`PushWorkerTestHarness`).
@Suite(.timeLimit(.minutes(2)))
struct ContentUpdateServiceTests {
    @Test func everyOutcomeReachesTheResultsTopicAndOffsetsAreCommitted() async throws {
        let server = try ContentServer(["article-1": "fresh", "article-2": "fresh too"])
        // Built as content-pushworker builds it: settings from the registry's workerSettings, the worker's metric
        // in the registry's metrics.
        var registry = WorkerRegistry(workerSettings: try WorkerSettings(json5: #"{ "content-update": { baseURL: "\#(server.baseURL.absoluteString)" } }"#))
        let settings = try registry.settings(ContentUpdateWorker.Settings.self, section: "content-update")
        let responses = try ContentUpdateWorker.makeResponsesCounter(in: registry.metrics)
        registry.register(type: "content-update", worker: ContentUpdateWorker(settings: settings, responses: responses), budget: .seconds(5))
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }

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

        // The worker's metric on the service's /metrics, beside the service's own series: counted as each
        // job ran, so complete once the results are in.
        var port = harness.service.httpServerPort
        let started = ContinuousClock.now
        while port == nil, ContinuousClock.now < started.advanced(by: .seconds(20)) {
            try await Task.sleep(for: .milliseconds(50))
            port = harness.service.httpServerPort
        }
        let metrics = try await HTTPProbe.request("http://127.0.0.1:\(try #require(port))/metrics").body
        for sample in [#"content_server_responses_total{status="200"} 2"#, #"content_server_responses_total{status="304"} 1"#,
                       #"content_server_responses_total{status="404"} 1"#, #"content_server_responses_total{status="other"} 0"#,
                       #"content_server_responses_total{status="error"} 0"#, "pushworker_records_consumed_total 5"] {
            #expect(metrics.contains(sample + "\n"), "\(sample) in \(metrics)")
        }

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
