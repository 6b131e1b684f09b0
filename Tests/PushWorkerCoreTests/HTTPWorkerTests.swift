import Foundation
import Testing
@testable import PushWorkerCore
import PushWorkerTesting

/// The http worker against a real HTTP server on loopback.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HTTPWorkerTests {
    static let payload = #"{"aps":{"content-available":1},"type":"content-update","contentId":"article-1"}"#

    static func server() throws -> StubHTTPServer {
        try StubHTTPServer { request in
            switch request.path {
            case "/ok": return .init(status: 200)
            case "/created": return .init(status: 201, body: Data("accepted".utf8))
            case "/nodata": return .init(status: 204)
            case "/json": return .init(status: 200, body: Data(#"{"result":"noData","reason":"unchanged"}"#.utf8))
            case "/json-failed": return .init(status: 200, body: Data(#"{"result":"failed","reason":"upstreamDown"}"#.utf8))
            case "/json-other": return .init(status: 200, body: Data(#"{"result":"maybe"}"#.utf8))
            case "/error": return .init(status: 500)
            case "/unavailable": return .init(status: 503)
            case "/busy": return .init(status: 429)
            case "/json-retry": return .init(status: 200, body: Data(#"{"result":"failed","reason":"rateLimited","retryable":true}"#.utf8))
            case "/json-retry-string": return .init(status: 200, body: Data(#"{"result":"failed","retryable":"yes"}"#.utf8))
            case "/notfound": return .init(status: 404)
            case "/slow": return .init(status: 200, delay: .seconds(3))
            case "/large": return .init(status: 200, body: Data(repeating: 0x61, count: 2_000_000))
            default: return .init(status: 500)
            }
        }
    }

    /// Runs `worker` once; the default budget is far above what a loopback request needs, so that only the
    /// tests about budgets depend on it (the first request of a process also sets URLSession up, which
    /// took over 5 s under AddressSanitizer on a loaded machine).
    static func run(_ worker: HTTPWorker, budget: Duration = .seconds(30), traceparent: String? = nil,
                    messageId: String = "msg-1", traceparentHeader: [UInt8]? = nil) async -> ExecutionReport {
        var job = Job(messageId: messageId, type: "content-update", value: Array(payload.utf8),
                      source: RecordSource(topic: "pushes", partition: 0, offset: 7), traceparent: traceparent)
        if let traceparentHeader { job.traceparentHeader = traceparentHeader }
        return await BudgetedExecutor().run(job, on: RegisteredWorker(name: "http", worker: worker, budget: budget))
    }

    static func worker(_ server: StubHTTPServer, _ path: String, headers: [String: String] = [:], timeout: Duration = .seconds(30)) -> HTTPWorker {
        HTTPWorker(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!, headers: headers, requestTimeout: timeout)  // invariant: a literal URL
    }

    @Test("status and body map to outcomes", arguments: [
        ("/ok", WorkerOutcome.newData),
        ("/created", WorkerOutcome.newData),
        ("/nodata", WorkerOutcome.noData),
        ("/json", WorkerOutcome(.noData, reason: "unchanged")),
        ("/json-failed", WorkerOutcome(.failed, reason: "upstreamDown")),
        ("/json-other", WorkerOutcome.newData),
        ("/error", WorkerOutcome.failed(.workerError, detail: "HTTP status 500")),
        // Retryable: the endpoint is unavailable for now, or asked for it.
        ("/unavailable", WorkerOutcome.failed(.workerError, detail: "HTTP status 503", retryable: true)),
        ("/busy", WorkerOutcome.failed(.workerError, detail: "HTTP status 429", retryable: true)),
        ("/json-retry", WorkerOutcome(.failed, reason: "rateLimited", retryable: true)),
        ("/json-retry-string", WorkerOutcome(.failed)),
        ("/notfound", WorkerOutcome.failed(.workerError, detail: "HTTP status 404")),
        ("/large", WorkerOutcome.newData),
    ])
    func statusMapping(_ path: String, _ expected: WorkerOutcome) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let report = await Self.run(Self.worker(server, path))
        #expect(report.outcome == expected)
    }

    @Test func theRequestCarriesThePayloadAndHeaders() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        _ = await Self.run(Self.worker(server, "/ok", headers: ["Authorization": "Bearer s3cret"]), traceparent: traceparent)
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.body == Data(Self.payload.utf8))
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.headers["apns-id"] == "msg-1")
        #expect(request.headers["traceparent"] == traceparent)
        #expect(request.headers["pushworker-attempt"] == "1")
        #expect(request.headers["authorization"] == "Bearer s3cret")
    }

    @Test("an apns-id or traceparent that could inject or cut a header is refused, naming it, and nothing is sent", arguments: [
        ("msg-1\r\nX-Injected: yes", nil, "apns-id"),
        ("msg-1\nX-Injected: yes", nil, "apns-id"),
        ("msg-1\u{0}X-Injected: yes", nil, "apns-id"),
        ("msg-1\rX", nil, "apns-id"),
        ("msg-1", Array("00-abc\r\nX-Injected: yes".utf8), "traceparent"),
        ("msg-1", Array("00-abc".utf8) + [0] + Array("X".utf8), "traceparent"),
        ("msg-1", [0xFF, 0xFE, 0xFD], "traceparent"),
    ] as [(String, [UInt8]?, String)])
    func headerInjectionIsRefused(_ messageId: String, _ traceparent: [UInt8]?, _ header: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let report = await Self.run(Self.worker(server, "/ok"), messageId: messageId, traceparentHeader: traceparent)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .invalidPayload)
        #expect(report.outcome.detail?.contains("the \(header) header") == true, "\(report.outcome.detail ?? "-")")
        #expect(server.requests.isEmpty, "no request was sent")
    }

    @Test func aTabInTheMessageIdIsSent() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let report = await Self.run(Self.worker(server, "/ok"), messageId: "msg\t1")
        #expect(report.outcome == .newData)
        #expect(server.requests.first?.headers["apns-id"] == "msg\t1")
    }

    @Test func aSlowServerHitsTheBudget() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let start = ContinuousClock.now
        let report = await Self.run(Self.worker(server, "/slow"), budget: .milliseconds(400))
        #expect(report.outcome.reason == .timeout, "\(report.outcome.detail ?? "-")")
        #expect(start.duration(to: .now) >= .milliseconds(390))
        #expect(start.duration(to: .now) < .milliseconds(1500))
    }

    @Test func itsOwnTimeoutIsUsedWhenShorterThanTheBudget() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let report = await Self.run(Self.worker(server, "/slow", timeout: .milliseconds(300)), budget: .seconds(5))
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .workerError)
        #expect(report.outcome.detail?.contains("timed out") == true, "\(report.outcome.detail ?? "-")")
        // Sub-second timeouts are kept, not truncated to zero (corelibs URLSession counts whole seconds).
        #expect(report.durationMs >= 290 && report.durationMs < 2500, "\(report.durationMs) ms")
    }

    @Test func aRefusedConnectionIsARetryableWorkerError() async throws {
        let server = try Self.server()
        let port = server.port
        server.stop()
        let worker = HTTPWorker(url: URL(string: "http://127.0.0.1:\(port)/ok")!)  // invariant: a literal URL
        let report = await Self.run(worker)
        #expect(report.outcome.result == .failed)
        #expect(report.outcome.reason == .workerError)
        #expect(report.outcome.detail?.contains("127.0.0.1") == true)
        #expect(report.outcome.retryable, "a transport error usually passes: retried as the policy says")
    }

    @Test func connectionsAreReusedAcrossJobs() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let worker = Self.worker(server, "/ok")
        for _ in 0..<10 { #expect(await Self.run(worker).outcome == .newData) }
        #expect(server.requests.count == 10)
        #expect(server.connections < 10, "keep-alive: \(server.connections) connections for 10 requests")
    }
}
