import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerTesting
import Testing

/// The built executable driven end to end through `Process`, as users run it.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandLineTests {
    static func writeConfig(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-e2e-\(UUID().uuidString.prefix(8)).json5").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A configuration with unique names. The HTTP server is off unless `http` says otherwise, so that
    /// services of tests running in parallel never compete for port 9400.
    static func config(suffix: String, workers: String, extra: String = "", http: String = "httpServer: { enabled: false },") -> String {
        """
        // end-to-end test configuration
        {
          inputTopics: ["pushes-\(suffix)"],
          resultsTopic: "results-\(suffix)",
          groupId: "e2e-\(suffix)",
          consumer: { "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 20 },
          log: { level: "info" },
          workers: { \(workers) },
          \(http)
          \(extra)
        }
        """
    }

    @Test func devBrokerOnlyThenProduceRunAndResults() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.writeConfig(Self.config(suffix: String(suffix), workers: #""ping": { kind: "noop", result: "newData" }"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let first = try await broker.waitForLines(1).first ?? ""
        #expect(first.hasPrefix("bootstrap.servers=127.0.0.1:"))
        let servers = String(first.dropFirst("bootstrap.servers=".count))

        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "ping",
                                                 "--set", "contentId=article-1", "--key", "device-1", "--header", "apns-id=e2e-1", "--count", "5"])
        #expect(produced.status == 0, "\(produced.stderr)")
        #expect(produced.stdout.first?.hasPrefix("delivered=5 failed=0") == true)
        let fromFile = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--file", "-"],
                                               stdin: Data("{\"aps\":{\"content-available\":1},\"type\":\"ping\"}\nnot json\n".utf8))
        #expect(fromFile.status == 0)
        #expect(fromFile.stdout.first?.hasPrefix("delivered=2 failed=0") == true)

        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "7", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.status == 0, "\(results.stderr)")
        let objects = results.stdout.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 7)
        #expect(objects.filter { $0["result"] as? String == "newData" }.count == 6)
        #expect(objects.filter { $0["reason"] as? String == "invalidPayload" }.count == 1)
        #expect(objects.filter { $0["messageId"] as? String == "e2e-1" }.count == 5)

        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0, "\(service.stderr.suffix(2000))")
        #expect(service.stderr.contains("stopped"))
        broker.signal(SIGINT)
        #expect(try await broker.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test func aKilledWorkerLosesNothingAfterRestart() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.writeConfig(Self.config(
            suffix: String(suffix), workers: #""job": { kind: "noop", result: "newData", delayMs: 150 }"#, extra: "maxInFlight: 2, dev: { partitions: 1 },"))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "job", "--count", "40"])
        #expect(produced.status == 0)

        let first = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let early = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                             "--from-beginning", "--count", "4", "--timeout", "60"], timeout: .seconds(90))
        #expect(early.status == 0)
        first.signal(SIGKILL)  // a crash: jobs in flight, results and offsets not yet committed
        _ = try await first.waitForExit()

        let second = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let deadline = ContinuousClock.now.advanced(by: .seconds(90))
        var offsets = Set<Int>()
        while offsets.count < 40 && ContinuousClock.now < deadline {
            let all = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)", "--from-beginning", "--timeout", "2"])
            offsets = Set(all.stdout.compactMap { line -> Int? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let source = object["source"] as? [String: Any] else { return nil }
                return source["offset"] as? Int
            })
        }
        #expect(offsets == Set(0..<40), "every input record has a result after the crash (at least once)")
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    @Test func devWithSamplesPrintsEveryOutcome() async throws {
        // The repository's example configuration serves on port 9400: any free port here.
        let dev = try startPushworker(["dev", "--samples"], environment: ["PUSHWORKER_HTTP_PORT": "0"], directory: PushWorkerExecutable.packageRoot)
        let lines = try await dev.waitForLines(11, timeout: .seconds(60))
        #expect(lines[0].hasPrefix("bootstrap.servers="))
        let objects = lines.dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let outcomes = Set(objects.map { "\($0["result"] as? String ?? "")/\($0["reason"] as? String ?? "-")" })
        #expect(outcomes == [
            "newData/-", "noData/noContentId", "failed/workerError", "failed/timeout", "noData/notSilent",
            "noData/expired", "noData/noWorker", "failed/invalidPayload", "failed/payloadTooLarge",
        ])
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test func badFlagsExitTwoAndBadConfigNamesTheKey() async throws {
        let unknownOption = try await runPushworker(["produce", "--bogus"])
        #expect(unknownOption.status == 2)
        #expect(unknownOption.stderr.contains("--bogus"))
        let unknownCommand = try await runPushworker(["frobnicate"])
        #expect(unknownCommand.status == 2)
        let badCount = try await runPushworker(["produce", "--bootstrap-servers", "127.0.0.1:1", "--count", "zero"])
        #expect(badCount.status == 2)
        for command in ["run", "dev", "produce", "results", "check-config", "bench"] {
            let help = try await runPushworker([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.first?.hasPrefix("Usage: pushworker \(command)") == true)
        }
        let typo = try Self.writeConfig(#"{ groupId: "g", workers: { ping: { kind: "noop", delay: 5 } } }"#)
        let checked = try await runPushworker(["check-config", "--config", typo])
        #expect(checked.status == 1)
        #expect(checked.stderr.contains("workers.ping.delay"))
        let badProperty = try Self.writeConfig(#"{ kafka: { "bootstrap.servers": "x:1", "no.such.property": "1" } }"#)
        let refused = try await runPushworker(["check-config", "--config", badProperty])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("no.such.property"))
        // (With a worker: check-config refuses a configuration without workers, as run does.)
        let secret = try Self.writeConfig(#"{ kafka: { "bootstrap.servers": "x:1", "sasl.password": "hunter2" }, workers: { ping: { kind: "noop" } } }"#)
        let masked = try await runPushworker(["check-config", "--config", secret])
        #expect(masked.status == 0)
        #expect(!masked.stdout.joined().contains("hunter2"))
        #expect(masked.stdout.joined().contains("*****"))
    }

    @Test func runServesMetricsAndHealthOnAFreePortAndRefusesABusyOne() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.writeConfig(Self.config(
            suffix: String(suffix), workers: #""ping": { kind: "noop", result: "newData" }"#,
            http: #"httpServer: { host: "127.0.0.1", port: 0 },"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "ping", "--count", "3"])
        #expect(produced.status == 0)

        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let prefix = "http server listening on http://127.0.0.1:"
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while !service.stderr.contains(prefix) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let line = try #require(service.stderr.split(separator: "\n").first { $0.contains(prefix) }, "\(service.stderr.suffix(2000))")
        #expect(line.contains("info") && line.hasSuffix("(/metrics, /healthz, /readyz)"))
        let port = try #require(UInt16(line.split(separator: prefix).last?.prefix(while: \.isNumber) ?? ""))
        var metrics = ""
        let consumed = await eventually(timeout: .seconds(60)) {
            metrics = (try? await httpGet("http://127.0.0.1:\(port)/metrics").body) ?? ""
            return metrics.contains("pushworker_records_consumed_total 3\n")
                && metrics.contains(#"pushworker_results_total{type="ping",result="newData",reason=""} 3"#)
        }
        #expect(consumed, "\(metrics)")
        #expect(try await httpGet("http://127.0.0.1:\(port)/healthz").status == 200)

        // A second service on the same port stops at once with one line naming the port and the settings.
        let busy = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers], environment: ["PUSHWORKER_HTTP_PORT": String(port)])
        #expect(try await busy.waitForExit(timeout: .seconds(30)) == 1)
        let last = busy.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("pushworker run: cannot start the HTTP server: port \(port) on 127.0.0.1 is already in use"), "\(busy.stderr)")
        #expect(last.contains("httpServer.port") && last.contains("PUSHWORKER_HTTP_PORT"))

        let checked = try await runPushworker(["check-config", "--config", config])
        #expect(checked.status == 0)
        #expect(checked.stdout.joined(separator: "\n").contains(#""httpServer" : {"#))

        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        await #expect(throws: (any Error).self, "the port is closed once the service has stopped") {
            _ = try await httpGet("http://127.0.0.1:\(port)/healthz")
        }
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }
}

/// GET over loopback.
func httpGet(_ url: String) async throws -> (status: Int, body: String) {
    let answer = try await HTTPProbe.request(url, timeout: .seconds(5))
    return (answer.status, answer.body)
}

/// Polls `condition` every 100 ms until it holds or `timeout` passes.
func eventually(timeout: Duration, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return await condition()
}
