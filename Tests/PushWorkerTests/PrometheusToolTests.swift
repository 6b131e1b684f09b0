import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import PushWorkerTesting
import Testing

/// External tools the tests below use: `promtool` and `prometheus` (Debian package `prometheus`).
///
/// A missing tool skips its test with the reason shown, unless `PUSHWORKER_REQUIRE_TOOLS=1` (CI sets it):
/// then the test runs and fails.
enum ExternalTool {
    /// The tool's path from `PATH`, or `nil`.
    static func path(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether missing tools must fail the tests (`PUSHWORKER_REQUIRE_TOOLS=1`).
    static var required: Bool { ProcessInfo.processInfo.environment["PUSHWORKER_REQUIRE_TOOLS"] == "1" }

    /// Whether a test that needs `name` runs.
    static func runs(_ name: String) -> Bool { path(name) != nil || required }

    /// The tool's path, or a failure naming the package to install.
    static func require(_ name: String) throws -> String {
        guard let path = path(name) else {
            throw ProbeFailure("\(name) is not installed (apt-get install prometheus) and PUSHWORKER_REQUIRE_TOOLS=1")
        }
        return path
    }
}

/// A real scrape checked by `promtool check metrics`, and a real Prometheus scraping the running service.
@Suite(.timeLimit(.minutes(3)))
struct PrometheusToolTests {
    static let records = 12

    /// A harness with the HTTP server on a free loopback port, after `records` pushes have their results;
    /// with `deadLetters`, failed results copy their input to a dead-letter topic.
    static func runningService(deadLetters: Bool = false) async throws -> (PushWorkerTestHarness, String) {
        var registry = WorkerRegistry()
        registry.register(type: "ping", worker: ClosureWorker { _ in .newData })
        registry.register(type: "maybe", worker: ClosureWorker { job in
            job.source.offset % 2 == 0 ? WorkerOutcome(.noData, reason: "quote\"back\\slash") : .failed("quota", detail: "HTTP 429")
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 2) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.kafka["statistics.interval.ms"] = "500"
            if deadLetters { $0.deadLetter = DeadLetterConfiguration(topic: "push-dead-letters-\(UUID().uuidString.prefix(8).lowercased())") }
        }
        do {
            let port = try await HTTPProbe.port(of: harness.service)
            for index in 0..<records {
                try await harness.produce(#"{"aps":{"content-available":1},"type":"\#(index % 3 == 0 ? "maybe" : "ping")"}"#)
            }
            do {
                _ = try await harness.results(count: records)
            } catch {
                // Say what the service saw, from its own metrics.
                let scrape = (try? await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").body) ?? "(no scrape)"
                let ready = (try? await HTTPProbe.request("http://127.0.0.1:\(port)/readyz").body) ?? "(no answer)"
                throw ProbeFailure("\(error); readyz: \(ready); metrics:\n\(scrape.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.contains("_bucket") }.joined(separator: "\n"))")
            }
            return (harness, "127.0.0.1:\(port)")
        } catch {
            try? await harness.shutdown()
            throw error
        }
    }

    /// Runs `tool` with `arguments` and `input` on stdin; returns its status and combined output (stdout
    /// and stderr share one pipe). The blocking I/O happens on a thread of its own, never on the
    /// cooperative pool other tests' workers need.
    static func run(_ tool: String, _ arguments: [String], input: String) async throws -> (status: Int32, output: String) {
        let (reader, writer) = try OwnedDescriptor.pipe()
        let child = try ChildProcess(program: tool, arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                     stdout: .descriptor(writer.rawValue), stderr: .descriptor(writer.rawValue))
        writer.close()
        let output = try await DedicatedThread.run(name: "test-\(tool.split(separator: "/").last ?? "tool")") { () -> [UInt8] in
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            try child.stdin?.write(Array(input.utf8))
            child.stdin?.close()
            defer { reader.close() }
            return reader.readToEnd()
        }
        let termination = await child.waitForExit()
        return (termination.exitStatus ?? termination.signal ?? -1, String(decoding: output, as: UTF8.self))
    }

    /// Stops a process (SIGTERM) and waits for it to end.
    static func stop(_ process: ChildProcess) async {
        process.signal(SIGTERM)
        _ = await process.waitForExit()
    }

    @Test(.enabled(if: ExternalTool.runs("promtool"), "promtool is not installed (apt-get install prometheus); set PUSHWORKER_REQUIRE_TOOLS=1 to fail instead"))
    func promtoolAcceptsARealScrape() async throws {
        let promtool = try ExternalTool.require("promtool")
        let (harness, address) = try await Self.runningService()
        // Wait for the statistics-based series too, so the whole exposition is checked.
        var body = ""
        _ = try await HTTPProbe.eventually(timeout: .seconds(20)) {
            body = try await HTTPProbe.request("http://\(address)/metrics").body
            return body.contains("pushworker_consumer_lag{") && body.contains("pushworker_kafka_brokers_up{client=\"producer\"}")
        }
        try await harness.shutdown()
        #expect(body.contains(#"reason="quote\"back\\slash""#), "escaped label values are part of the check")
        let checked = try await Self.run(promtool, ["check", "metrics"], input: body)
        #expect(checked.status == 0, "promtool check metrics: \(checked.output)\n\(body)")
        #expect(checked.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "no lint warnings: \(checked.output)")
    }

    /// Starts a real Prometheus scraping `address` every second, runs `body` with its HTTP API port and its
    /// log, and stops it (whatever `body` throws).
    static func withPrometheus(scraping address: String, _ body: (ChildProcess, UInt16, URL) async throws -> Void) async throws {
        let prometheusPath = try ExternalTool.require("prometheus")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-prometheus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: pushworker
                static_configs:
                  - targets: ['\(address)']
            """.write(to: config, atomically: true, encoding: .utf8)
        let port = try LoopbackPort.free()
        let log = directory.appendingPathComponent("prometheus.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        let process = try ChildProcess(program: prometheusPath, arguments: [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)",
        ], environment: ProcessInfo.processInfo.environment, stdin: .inherit,
           stdout: .descriptor(logHandle.fileDescriptor), stderr: .descriptor(logHandle.fileDescriptor))
        do {
            try await body(process, port, log)
        } catch {
            await Self.stop(process)
            try? logHandle.close()
            throw error
        }
        await Self.stop(process)
        try? logHandle.close()
    }

    @Test(.enabled(if: ExternalTool.runs("prometheus"), "prometheus is not installed (apt-get install prometheus); set PUSHWORKER_REQUIRE_TOOLS=1 to fail instead"))
    func aRealPrometheusScrapesTheService() async throws {
        _ = try ExternalTool.require("prometheus")
        let (harness, address) = try await Self.runningService()
        do {
            try await Self.withPrometheus(scraping: address) { process, port, log in
                try await Self.scrapedByPrometheus(process, port: port, log: log)
            }
        } catch {
            try? await harness.shutdown()
            throw error
        }
        try await harness.shutdown()
    }

    /// Checks what the Prometheus at `port` has scraped from the service.
    static func scrapedByPrometheus(_ process: ChildProcess, port: UInt16, log: URL) async throws {
        let api = "http://127.0.0.1:\(port)/api/v1"
        // Until Prometheus has scraped the service and answers the produced count (explicit limit: 90 s).
        var answer = ""
        let seen = await HTTPProbe.eventually(timeout: .seconds(90)) {
            guard process.isRunning else { return true }
            guard let reply = try? await HTTPProbe.request(api + "/query?query=pushworker_records_consumed_total", timeout: .seconds(2)) else { return false }
            answer = reply.body
            return Self.vectorValue(reply.body) == Double(Self.records)
        }
        let prometheusLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(process.isRunning, "prometheus exited: \(prometheusLog.suffix(2000))")
        #expect(seen && Self.vectorValue(answer) == Double(Self.records), "last answer: \(answer)\n\(prometheusLog.suffix(2000))")
        let targets = try await HTTPProbe.request(api + "/targets", timeout: .seconds(5))
        let health = Self.targetHealth(targets.body)
        #expect(health == ["up"], "\(targets.body)")
        let results = try await HTTPProbe.request(api + "/query?query=sum(pushworker_results_total)", timeout: .seconds(5))
        #expect(Self.vectorValue(results.body) == Double(Self.records), "\(results.body)")
    }

    /// The value of the first sample of an instant-vector answer of the HTTP API.
    static func vectorValue(_ body: String) -> Double? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let value = result.first?["value"] as? [Any], value.count == 2, let text = value[1] as? String else { return nil }
        return Double(text)
    }

    /// The `health` of every active target.
    static func targetHealth(_ body: String) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let data = object["data"] as? [String: Any], let targets = data["activeTargets"] as? [[String: Any]] else { return [] }
        return targets.compactMap { $0["health"] as? String }
    }
}
