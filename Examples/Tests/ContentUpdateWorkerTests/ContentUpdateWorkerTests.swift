import ContentUpdateWorker
import Foundation
import PushWorkerCore
import PushWorkerTesting
import Synchronization
import Testing

/// The worker called directly with hand-built jobs (`WorkerProbe`), against a real HTTP server on loopback.
@Suite(.timeLimit(.minutes(1)))
struct ContentUpdateWorkerTests {
    static func payload(_ contentId: String?) -> String {
        guard let contentId else { return #"{"aps":{"content-available":1},"type":"content-update"}"# }
        return #"{"aps":{"content-available":1},"type":"content-update","contentId":"\#(contentId)"}"#
    }

    @Test func withoutContentIdItIsNoDataAndNothingIsFetched() async throws {
        let server = try ContentServer(["a-1": "hello"])
        let worker = ContentUpdateWorker(baseURL: server.baseURL)
        let report = await WorkerProbe.run(worker, payload: Self.payload(nil), budget: .seconds(5))
        #expect(report.outcome == WorkerOutcome(.noData, reason: "noContentId"))
        #expect(server.http.requests.isEmpty)
    }

    @Test func newContentIsNewDataThenUnchangedIsNoDataByConditionalRequest() async throws {
        let server = try ContentServer(["a-1": "first version"])
        let received = Mutex<[String]>([])
        let worker = ContentUpdateWorker(baseURL: server.baseURL) { id, body in
            received.withLock { $0.append("\(id)=\(String(decoding: body, as: UTF8.self))") }
        }
        let first = await WorkerProbe.run(worker, payload: Self.payload("a-1"), budget: .seconds(5))
        #expect(first.outcome == .newData)
        let second = await WorkerProbe.run(worker, payload: Self.payload("a-1"), budget: .seconds(5))
        #expect(second.outcome == WorkerOutcome(.noData, reason: "unchanged"))
        server.update("a-1", to: "second version")
        let third = await WorkerProbe.run(worker, payload: Self.payload("a-1"), budget: .seconds(5))
        #expect(third.outcome == .newData)

        #expect(received.withLock { $0 } == ["a-1=first version", "a-1=second version"])
        let requests = server.http.requests
        #expect(requests.map(\.path) == ["/content/a-1", "/content/a-1", "/content/a-1"])
        #expect(requests[0].headers["if-none-match"] == nil)
        #expect(requests[1].headers["if-none-match"] != nil, "the second fetch is conditional on the first's ETag")
    }

    @Test func withoutValidatorsTheSameBodyIsUnchanged() async throws {
        let server = try ContentServer(["b-2": "same"], withValidators: false)
        let worker = ContentUpdateWorker(baseURL: server.baseURL)
        #expect(await WorkerProbe.run(worker, payload: Self.payload("b-2")).outcome == .newData)
        #expect(await WorkerProbe.run(worker, payload: Self.payload("b-2")).outcome == WorkerOutcome(.noData, reason: "unchanged"))
        server.update("b-2", to: "different")
        #expect(await WorkerProbe.run(worker, payload: Self.payload("b-2")).outcome == .newData)
    }

    @Test func missingContentAndServerErrorsFail() async throws {
        let server = try ContentServer([:])
        let worker = ContentUpdateWorker(baseURL: server.baseURL)
        let missing = await WorkerProbe.run(worker, payload: Self.payload("gone"))
        #expect(missing.outcome.result == .failed)
        #expect(missing.outcome.reason == "contentNotFound")
        let unavailable = await WorkerProbe.run(worker, payload: Self.payload("unavailable"))
        #expect(unavailable.outcome.result == .failed)
        #expect(unavailable.outcome.reason == .workerError)
        #expect(unavailable.outcome.detail?.contains("HTTP 503") == true, "\(unavailable.outcome.detail ?? "-")")
    }

    @Test func aRefusedConnectionIsAWorkerError() async throws {
        let server = try ContentServer([:])
        let url = server.baseURL
        server.http.stop()
        let report = await WorkerProbe.run(ContentUpdateWorker(baseURL: url), payload: Self.payload("a-1"), budget: .seconds(5))
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .workerError)
    }

    @Test func aSlowServerIsCutOffAtTheBudget() async throws {
        let server = try ContentServer(["slow": "eventually"], delay: .seconds(3))
        let worker = ContentUpdateWorker(baseURL: server.baseURL)
        let report = await WorkerProbe.run(worker, payload: Self.payload("slow"), budget: .milliseconds(300))
        #expect(report.outcome == WorkerOutcome.failed(.timeout, detail: report.outcome.detail))
        #expect(report.outcome.reason == .timeout)
    }

    @Test func aContentIdIsOnePathComponentUnderTheBaseURL() throws {
        let worker = ContentUpdateWorker(baseURL: URL(string: "https://cdn.example.com/content/")!)
        #expect(worker.url(for: "article-42").absoluteString == "https://cdn.example.com/content/article-42")
        #expect(worker.url(for: "a/b").absoluteString == "https://cdn.example.com/content/a%2Fb")
        #expect(worker.url(for: "..").absoluteString == "https://cdn.example.com/content/%2E%2E")
        #expect(worker.url(for: "x?y#z").absoluteString == "https://cdn.example.com/content/x%3Fy%23z")
        #expect(worker.url(for: "//evil.example").host == "cdn.example.com")
    }

    @Test func aContentIdThatIsNotAStringIsAnInvalidPayload() async throws {
        let server = try ContentServer([:])
        let report = await WorkerProbe.run(ContentUpdateWorker(baseURL: server.baseURL),
                                           payload: #"{"aps":{"content-available":1},"type":"content-update","contentId":42}"#)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .invalidPayload)
        #expect(report.outcome.detail?.contains("contentId") == true)
        #expect(server.http.requests.isEmpty)
    }

    @Test func theTraceparentIsForwarded() async throws {
        let server = try ContentServer(["t-1": "x"])
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let report = await WorkerProbe.run(ContentUpdateWorker(baseURL: server.baseURL), payload: Self.payload("t-1"),
                                           headers: ["traceparent": traceparent])
        #expect(report.outcome == .newData)
        #expect(server.http.requests.count == 1)
        #expect(server.http.requests.first?.headers["traceparent"] == traceparent)
    }

    @Test func theWorkerIsBuiltFromItsSettingsSectionAndWritesNewContentToItsDirectory() async throws {
        let server = try ContentServer(["a-1": "hello"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("content-settings-\(UUID().uuidString.prefix(8))")
        let worker = try WorkerProbe.makeWorker(ContentUpdateWorker.self, settings: """
            { baseURL: "\(server.baseURL.absoluteString)", directory: "\(directory.path)", requestTimeout: 2500 }
            """, section: "content-update")
        #expect(worker.baseURL == server.baseURL)
        #expect(worker.requestTimeout == .milliseconds(2500))
        #expect(await WorkerProbe.run(worker, payload: Self.payload("a-1")).outcome == .newData)
        #expect(try String(contentsOf: directory.appendingPathComponent("a-1"), encoding: .utf8) == "hello")
        // Only baseURL is required; the request timeout is 10 s by default.
        let plain = try WorkerProbe.makeWorker(ContentUpdateWorker.self, settings: #"{ baseURL: "https://cdn.example.com/content" }"#)
        #expect(plain.requestTimeout == .seconds(10))
    }

    @Test func badSettingsAreRefusedWithTheKeysPath() throws {
        let cases = [
            (#"{ baseUrl: "https://cdn.example.com" }"#, "workerSettings.content-update.baseUrl", "is not a setting of ContentUpdateWorker.Settings; known: baseURL, directory, requestTimeout"),
            (#"{ directory: "/tmp/x" }"#, "workerSettings.content-update.baseURL", "is missing; ContentUpdateWorker.Settings requires it"),
            (#"{ baseURL: "file:///etc" }"#, "workerSettings.content-update.baseURL", "must be an http or https URL with a host, got 'file:///etc'"),
            (#"{ baseURL: "https://cdn.example.com", requestTimeout: -1 }"#, "workerSettings.content-update.requestTimeout", "must be a duration in milliseconds of at least 0, got -1"),
        ]
        for (settings, key, message) in cases {
            do {
                _ = try WorkerProbe.makeWorker(ContentUpdateWorker.self, settings: settings, section: "content-update")
                Issue.record("\(settings) was taken")
            } catch let error as WorkerSettingsError {
                #expect(error.key == key)
                #expect(error.message == message)
            }
        }
    }

    @Test func theResponsesCounterCountsTheServersAnswersByStatus() async throws {
        let server = try ContentServer(["a-1": "x"])
        let metrics = MetricsRegistry()
        let responses = try ContentUpdateWorker.makeResponsesCounter(in: metrics)
        let worker = ContentUpdateWorker(settings: .init(baseURL: server.baseURL), responses: responses)
        for id in ["a-1", "a-1", "gone", "unavailable"] { _ = await WorkerProbe.run(worker, payload: Self.payload(id)) }
        #expect(responses.value(labels: ["200"]) == 1)
        #expect(responses.value(labels: ["304"]) == 1)
        #expect(responses.value(labels: ["404"]) == 1)
        #expect(responses.value(labels: ["other"]) == 1)
        // No HTTP answer: a server that has stopped (a new worker: the first keeps its connection alive).
        let stopped = try ContentServer([:])
        stopped.http.stop()
        let refused = await WorkerProbe.run(ContentUpdateWorker(settings: .init(baseURL: stopped.baseURL), responses: responses),
                                            payload: Self.payload("a-2"))
        #expect(refused.outcome.reason == .workerError)
        #expect(responses.value(labels: ["error"]) == 1, "\(refused.outcome) \(metrics.exposition())")
        #expect(throws: MetricsError.self) { try ContentUpdateWorker.makeResponsesCounter(in: metrics) }
    }
}
