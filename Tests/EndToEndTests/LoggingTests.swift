import Foundation
import PushWorkerTesting
import Testing

/// What operators read: structured logs on stderr, and secrets kept out of them.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct LoggingTests {
    static func jsonLines(_ stderr: String) -> (objects: [[String: Any]], bad: [String]) {
        var objects: [[String: Any]] = []
        var bad: [String] = []
        for line in stderr.split(separator: "\n") where !line.isEmpty {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] { objects.append(object) } else { bad.append(String(line)) }
        }
        return (objects, bad)
    }

    @Test func jsonLogsAreOneObjectPerLineWithRecordMetadataAndLibrdkafkaFoldedIn() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: suffix, workers: #""slow": { kind: "noop", result: "newData", delayMs: 5000, budgetMs: 300 }, "broken": { kind: "exec", command: ["\#(PushWorkerExecutable.packageRoot.path)/Examples/workers/broken.sh"] }"#,
            extra: #"kafka: { debug: "cgrp" }, dev: { partitions: 1 },"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "slow",
                                                "--header", "apns-id=log-1"])
        #expect(produced.status == 0)
        let broken = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "broken",
                                              "--header", "apns-id=log-2"])
        #expect(broken.status == 0)

        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers],
                                          environment: ["PUSHWORKER_LOG_FORMAT": "json", "PUSHWORKER_LOG_LEVEL": "debug"])
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "2", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.stdout.contains { $0.contains("\"timeout\"") })
        // The crash's detail ends with its last stderr line, and that line is logged again at warning.
        #expect(results.stdout.contains { $0.contains("\"exit status 3; stderr: broken worker: simulated failure\"") }, "\(results.stdout)")
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()

        let (objects, bad) = Self.jsonLines(service.stderr)
        #expect(bad.isEmpty, "lines that are not JSON objects: \(bad.prefix(3))")
        #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String && $0["message"] is String && $0["label"] is String })
        let timeout = objects.first { ($0["message"] as? String)?.contains("ran past its budget") == true }
        #expect(timeout?["level"] as? String == "warning")
        #expect(timeout?["messageId"] as? String == "log-1")
        #expect(timeout?["type"] as? String == "slow")
        #expect(timeout?["topic"] as? String == "pushes-\(suffix)")
        #expect(timeout?["partition"] as? String == "0")
        #expect(timeout?["offset"] as? String == "0")
        let stderrLine = objects.first { $0["label"] as? String == "pushworker.exec" && $0["messageId"] as? String == "log-2" }
        #expect(stderrLine?["message"] as? String == "broken worker: simulated failure", "an exec program's stderr is logged, not passed through")
        #expect(stderrLine?["type"] as? String == "broken")
        let warned = objects.first { $0["level"] as? String == "warning" && $0["messageId"] as? String == "log-2" }
        #expect(warned?["message"] as? String == "stderr of a failed program: broken worker: simulated failure", "a failed program's stderr again at warning")
        #expect(warned?["outcome"] as? String == "exit status 3; stderr: broken worker: simulated failure")
        let result = objects.first { $0["message"] as? String == "result" && $0["messageId"] as? String == "log-1" }
        #expect(result?["level"] as? String == "debug")
        #expect(result?["result"] as? String == "failed" && result?["reason"] as? String == "timeout")
        #expect(result?["topic"] as? String == "pushes-\(suffix)" && result?["offset"] as? String == "0" && result?["type"] as? String == "slow")
        #expect(objects.contains { $0["label"] as? String == "pushworker.librdkafka" && $0["facility"] != nil },
                "librdkafka's own log lines come through the same logger")
    }

    @Test func secretsNeverReachTheLogs() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let password = "hunter2-\(suffix)"
        // SASL against the embedded cluster (which has no SASL): librdkafka logs its security and
        // configuration work at debug level, and connections fail; the password must appear nowhere.
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: suffix, workers: #""ping": { kind: "noop" }"#,
            extra: #"kafka: { "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "pushworker", "sasl.password": "\#(password)", debug: "security,broker,conf,generic" },"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers],
                                          environment: ["PUSHWORKER_LOG_LEVEL": "debug", "PUSHWORKER_KAFKA_SSL_KEY_PASSWORD": "env-\(password)"])
        try await Task.sleep(for: .seconds(4))
        service.signal(SIGTERM)
        _ = try await service.waitForExit(timeout: .seconds(60))
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()

        let stderr = service.stderr
        #expect(stderr.contains("pushworker.librdkafka"), "librdkafka logged (so the check below is not vacuous)")
        #expect(stderr.contains("sasl.password = [redacted]"), "librdkafka dumped its configuration, redacting the password")
        #expect(!stderr.contains(password), "the SASL password was printed")
        let checked = try await runPushworker(["check-config", "--config", config])
        #expect(!checked.stdout.joined().contains(password))
    }
}
