import Foundation
import PushWorkerTesting
import Testing

/// The browser the status page test uses: Debian's `chromium`, headless. As `ExternalTool` in
/// PushWorkerTests/PrometheusToolTests.swift: missing, the test is skipped with the reason shown, unless
/// `PUSHWORKER_REQUIRE_TOOLS=1` (CI sets it), when it runs and fails.
enum BrowserTool {
    /// `chromium` from `PATH`, or `nil`.
    static var path: String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/chromium" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether missing tools must fail the tests (`PUSHWORKER_REQUIRE_TOOLS=1`).
    static var required: Bool { ProcessInfo.processInfo.environment["PUSHWORKER_REQUIRE_TOOLS"] == "1" }

    /// Whether the test runs.
    static var runs: Bool { path != nil || required }

    /// The browser's path, or a failure naming the package to install.
    static func require() throws -> String {
        guard let path else { throw RunningCommandError("chromium is not installed (apt-get install chromium) and PUSHWORKER_REQUIRE_TOOLS=1") }
        return path
    }
}

/// The status page of the built `pushworker dev`, with records flowing and one invalid record, loaded in
/// headless Chromium: the rendered DOM must hold plots with data points, the failed record in the table and
/// the group balance line.
@Suite(.timeLimit(.minutes(2)))
struct StatusPageBrowserTests {
    @Test(.enabled(if: BrowserTool.runs, "chromium is not installed (apt-get install chromium); set PUSHWORKER_REQUIRE_TOOLS=1 to fail instead"))
    func theRenderedPageShowsPlotsAndTheFailedRecord() async throws {
        let chromium = try BrowserTool.require()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-status-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("pushworker.json5")
        try """
            {
              workers: { ok: { kind: "noop", result: "newData" } },
              httpServer: { host: "127.0.0.1", port: 0 },
              statusPage: { sampleIntervalMs: 300, publishIntervalMs: 500 },
            }
            """.write(to: config, atomically: true, encoding: .utf8)
        let dev = try startPushworker(["dev", "--config", config.path])
        let bootstrap = try #require(try await dev.waitForLines(1, timeout: .seconds(30)).first?.split(separator: "=", maxSplits: 1).last.map(String.init))
        let port = try await Self.httpPort(of: dev)
        let base = "http://127.0.0.1:\(port)"

        // Once the member has its partitions (the mock's first join takes about 3 s): records flowing (2 s
        // worth, 20 a second, so that several samples see them), and one invalid record with a marker that
        // must never show.
        let assigned = ContinuousClock.now.advanced(by: .seconds(30))
        while ContinuousClock.now < assigned {
            let body = try await HTTPProbe.request(base + "/status.json").body
            if try JSONDecoder().decode(StatusSummary.self, from: Data(body.utf8)).member.assignment.count > 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let marker = "payload-marker-\(UUID().uuidString)"
        let flowing = try startPushworker(["produce", "--bootstrap-servers", bootstrap, "--type", "ok", "--count", "40", "--rate", "20"])
        let invalid = try await runPushworker(["produce", "--bootstrap-servers", bootstrap, "--file", "-"],
                                              stdin: Data(#"{"aps":{"content-available":1},"type":"ok","secret":"\#(marker)""#.utf8 + [10]))
        #expect(invalid.status == 0, "\(invalid.stderr)")
        // The invalid record's result, as dev prints it: its messageId is what the table must list.
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        var messageId: String?
        while messageId == nil && ContinuousClock.now < deadline {
            messageId = dev.stdoutLines.dropFirst().lazy.compactMap { line -> String? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      object["reason"] as? String == "invalidPayload" else { return nil }
                return object["messageId"] as? String
            }.first
            if messageId == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let failedId = try #require(messageId, "dev printed no invalidPayload result: \(dev.stderr.suffix(2000))")
        #expect(try await flowing.waitForExit(timeout: .seconds(30)) == 0)

        // Wait until the history holds a few samples with records in them and the failure is listed.
        var status = ""
        let filled = ContinuousClock.now.advanced(by: .seconds(30))
        while ContinuousClock.now < filled {
            status = try await HTTPProbe.request(base + "/status.json").body
            let document = try JSONDecoder().decode(StatusSummary.self, from: Data(status.utf8))
            if document.samples.count >= 5, document.samples.filter({ $0.recordsPerSecond > 0 }).count >= 2,
               document.failures.contains(where: { $0.messageId == failedId }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(!status.contains(marker), "no payload in /status.json")

        let profile = directory.appendingPathComponent("chromium-profile")
        // LD_PRELOAD cleared: a sanitizer run's preload is meant for pushworker, not the browser.
        let browser = try await RunningCommand.run(URL(fileURLWithPath: chromium), [
            "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=\(profile.path)", "--virtual-time-budget=5000",
            "--dump-dom", base + "/",
        ], environment: ["LD_PRELOAD": ""], timeout: .seconds(60))
        #expect(browser.status == 0, "\(browser.stderr.suffix(2000))")
        let dom = browser.stdout.joined(separator: "\n")
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0)

        let plots = Self.plotPoints(in: dom)
        #expect(Set(plots.keys) == ["plot-records", "plot-results", "plot-durations", "plot-lag", "plot-jobs", "plot-waiting", "plot-events"],
                "plots drawn: \(plots)\n\(dom.prefix(3000))")
        for (plot, points) in plots { #expect(points >= 2, "\(plot) has \(points) data points") }
        #expect(dom.contains(#"class="banner hidden" id="noplots""#), "dygraphs was served: no note about tables")
        let failures = try #require(dom.range(of: #"<table id="failures">"#).map { String(dom[$0.lowerBound...]) })
        let table = failures.components(separatedBy: "</table>")[0]
        #expect(table.contains(failedId), "the failed record is listed: \(table)")
        #expect(table.contains("invalidPayload"))
        #expect(!dom.contains(marker), "no payload on the page")
        // One member holding every partition: the group balance line under the group table, no flag.
        #expect(dom.contains(#"<div id="balance" data-flags="0">"#), "the group balance is drawn: \(dom.prefix(3000))")
        #expect(dom.contains("balanced: no flag raised"))
    }

    @Test(.enabled(if: BrowserTool.runs, "chromium is not installed (apt-get install chromium); set PUSHWORKER_REQUIRE_TOOLS=1 to fail instead"))
    func withoutDygraphsThePageShowsTablesAndSaysWhy() async throws {
        let chromium = try BrowserTool.require()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-status-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("pushworker.json5")
        let missing = directory.appendingPathComponent("no-dygraphs").path
        try """
            {
              workers: { ok: { kind: "noop", result: "newData" } },
              httpServer: { host: "127.0.0.1", port: 0 },
              statusPage: { sampleIntervalMs: 200, publishIntervalMs: 500, dygraphsPath: "\(missing)" },
            }
            """.write(to: config, atomically: true, encoding: .utf8)
        let dev = try startPushworker(["dev", "--config", config.path])
        let port = try await Self.httpPort(of: dev)
        let base = "http://127.0.0.1:\(port)"
        #expect(try await HTTPProbe.request(base + "/static/dygraph.min.js").status == 404)
        // A few samples (of an idle service: rows of zeros).
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while ContinuousClock.now < deadline {
            let body = try await HTTPProbe.request(base + "/status.json").body
            if try JSONDecoder().decode(StatusSummary.self, from: Data(body.utf8)).samples.count >= 3 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let browser = try await RunningCommand.run(URL(fileURLWithPath: chromium), [
            "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir=\(directory.appendingPathComponent("chromium-profile").path)",
            "--virtual-time-budget=3000", "--dump-dom", base + "/",
        ], environment: ["LD_PRELOAD": ""], timeout: .seconds(60))
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0)
        let dom = browser.stdout.joined(separator: "\n")
        #expect(dom.contains(#"class="banner" id="noplots""#), "the note about the missing library shows")
        #expect(dom.contains(missing), "the note names the path looked in")
        // The plots whose series exist from the first sample are tables of samples; the others (results by
        // type, durations, lag) have no series on an idle service and say "no data yet". Nothing is drawn.
        for plot in ["plot-records", "plot-jobs", "plot-waiting", "plot-events"] {
            #expect(dom.contains(#"id="\#(plot)" data-points="0" data-fallback="table""#), "\(plot) is a table: \(dom.prefix(3000))")
        }
        #expect(!dom.contains("<canvas"), "no plot drawn")
        #expect(dev.stderr.contains("the status page's plotting library is missing"))
    }

    /// The parts of `/status.json` the test waits for.
    struct StatusSummary: Decodable {
        struct Sample: Decodable { var recordsPerSecond: Double }
        struct Failure: Decodable { var messageId: String }
        struct Member: Decodable { var assignment: [String] }
        var member: Member
        var samples: [Sample]
        var failures: [Failure]
    }

    /// The HTTP port `dev` logs once its server listens (`http server listening on http://HOST:PORT`).
    static func httpPort(of dev: RunningCommand) async throws -> Int {
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while ContinuousClock.now < deadline {
            if let range = dev.stderr.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
               let port = Int(dev.stderr[range].split(separator: ":").last ?? "") {
                return port
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RunningCommandError("dev did not log its HTTP port: \(dev.stderr.suffix(2000))")
    }

    /// Each plot's `data-points` attribute as the page's script wrote it after drawing.
    static func plotPoints(in dom: String) -> [String: Int] {
        var plots: [String: Int] = [:]
        let pattern = try? NSRegularExpression(pattern: #"id="(plot-[a-z]+)" data-points="([0-9]+)""#)
        let range = NSRange(dom.startIndex..., in: dom)
        for match in pattern?.matches(in: dom, range: range) ?? [] {
            guard let name = Range(match.range(at: 1), in: dom), let count = Range(match.range(at: 2), in: dom) else { continue }
            plots[String(dom[name])] = Int(dom[count])
        }
        return plots
    }
}
