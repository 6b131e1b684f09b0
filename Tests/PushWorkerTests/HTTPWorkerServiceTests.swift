import Foundation
import PushWorkerCore
import PushWorker
import PushWorkerTesting
import Testing

/// The http worker declared in a configuration file, run by the real service on an embedded cluster,
/// against a real HTTP server on loopback.
@Suite(.timeLimit(.minutes(2)))
struct HTTPWorkerServiceTests {
    @Test func configuredHTTPWorkerOutcomesReachTheResultsTopic() async throws {
        let server = try StubHTTPServer { request in
            let body = String(decoding: request.body, as: UTF8.self)
            if body.contains("\"unchanged\"") { return .init(status: 200, body: Data(#"{"result":"noData","reason":"unchanged"}"#.utf8)) }
            if body.contains("\"gone\"") { return .init(status: 204) }
            if body.contains("\"broken\"") { return .init(status: 503) }
            // Far beyond the 8 s budget, which the other cases need only milliseconds of (room for a loaded
            // machine, a sanitizer's slowdown, and URLSession's first set-up in the process).
            if body.contains("\"slow\"") { return .init(status: 200, delay: .seconds(30)) }
            return .init(status: 200)
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("http-worker-\(UUID().uuidString.prefix(8)).json5")
        try """
        { workers: { "content-update": { kind: "http", url: "\(server.baseURL.absoluteString)/hooks/content", budgetMs: 8000, retry: { maxAttempts: 1 },
                                         headers: { "X-Team": "push" }, headersFromEnv: { Authorization: "CONTENT_HOOK_TOKEN" } } } }
        """.write(to: file, atomically: true, encoding: .utf8)
        let loaded = try ServiceConfiguration.load(path: file.path, environment: ["CONTENT_HOOK_TOKEN": "Bearer s3cret"])
        let harness = try await PushWorkerTestHarness.start(registry: loaded.makeRegistry())

        let cases: [(contentId: String, result: String, reason: String?)] = [
            ("fresh", "newData", nil), ("unchanged", "noData", "unchanged"), ("gone", "noData", nil),
            ("broken", "failed", "workerError"), ("slow", "failed", "timeout"),
        ]
        for (index, item) in cases.enumerated() {
            try await harness.produce(#"{"aps":{"content-available":1},"type":"content-update","contentId":"\#(item.contentId)"}"#,
                                      headers: ["apns-id": "http-\(index)", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        }
        let results = try await harness.results(count: cases.count)
        for (index, item) in cases.enumerated() {
            let result = results.first { $0.messageId == "http-\(index)" }
            #expect(result?.result == item.result, "\(item.contentId): \(result?.json.description ?? "none")")
            #expect(result?.reason == item.reason, "\(item.contentId)")
        }
        #expect(results.first { $0.messageId == "http-3" }?.detail == "HTTP status 503")

        let requests = server.requests
        #expect(requests.count == cases.count)
        #expect(requests.allSatisfy { $0.method == "POST" && $0.path == "/hooks/content" })
        #expect(requests.allSatisfy { $0.headers["authorization"] == "Bearer s3cret" && $0.headers["x-team"] == "push" })
        #expect(requests.allSatisfy { $0.headers["traceparent"]?.hasPrefix("00-4bf92f35") == true })
        #expect(Set(requests.compactMap { $0.headers["apns-id"] }) == Set((0..<cases.count).map { "http-\($0)" }))
        try await harness.shutdown()
    }

    @Test func anApnsIdThatWouldInjectAHeaderIsRefusedAndNeverSent() async throws {
        let server = try StubHTTPServer { _ in .init(status: 200) }
        defer { server.stop() }
        var registry = WorkerRegistry()
        registry.register(type: "content-update", worker: HTTPWorker(url: server.baseURL.appendingPathComponent("hooks")), name: "http:content-update")
        let harness = try await PushWorkerTestHarness.start(registry: registry)
        let push = #"{"aps":{"content-available":1},"type":"content-update"}"#
        try await harness.produce(push, headers: ["apns-id": "evil\r\nX-Injected: yes"])
        try await harness.produce(push, headers: ["apns-id": "plain", "traceparent": "00-x\ny"])
        try await harness.produce(push, headers: ["apns-id": "fine"])
        let results = try await harness.results(count: 3)
        try await harness.shutdown()
        let injected = try #require(results.first { $0.messageId == "evil\r\nX-Injected: yes" })
        #expect(injected.result == "failed")
        #expect(injected.reason == "invalidPayload")
        #expect(injected.detail?.contains("the apns-id header") == true, "\(injected.detail ?? "-")")
        let trace = try #require(results.first { $0.messageId == "plain" })
        #expect(trace.reason == "invalidPayload")
        #expect(trace.detail?.contains("the traceparent header") == true, "\(trace.detail ?? "-")")
        #expect(results.first { $0.messageId == "fine" }?.result == "newData")
        #expect(server.requests.count == 1, "only the clean record was sent")
        #expect(server.requests.allSatisfy { $0.headers["x-injected"] == nil && $0.headers["apns-id"] == "fine" })
    }
}
