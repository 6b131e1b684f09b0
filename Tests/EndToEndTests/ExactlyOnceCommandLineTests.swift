import Foundation
import PushWorkerTesting
import Testing

/// The exactly-once results mode through the built executable: `PUSHWORKER_EXACTLY_ONCE=true` turns it on,
/// `check-config` shows the transactional.id in effect, `run` writes the results in transactions, and
/// `pushworker results` (read_committed) prints each once.
@Suite(.timeLimit(.minutes(3)))
struct ExactlyOnceCommandLineTests {
    /// Not under a sanitizer (`PUSHWORKER_SANITIZER`): the wiring it checks runs in ExactlyOnceTests there.
    @Test(.disabled(if: !(ProcessInfo.processInfo.environment["PUSHWORKER_SANITIZER"] ?? "").isEmpty, "light under sanitizers: ExactlyOnceTests run the same pipeline in-process"))
    func runWithExactlyOnceWritesEachResultOnce() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(suffix: String(suffix), workers: #""ping": { kind: "noop", result: "newData" }"#))
        let environment = ["PUSHWORKER_EXACTLY_ONCE": "true", "PUSHWORKER_TRANSACTIONAL_ID": "e2e-member-\(suffix)"]
        let checked = try startPushworker(["check-config", "--config", config], environment: environment)
        #expect(try await checked.waitForExit(timeout: .seconds(30)) == 0, "\(checked.stderr)")
        let text = checked.stdoutLines.joined(separator: "\n")
        #expect(text.contains(#""transactionalId" : "e2e-member-\#(suffix)""#) && text.contains(#""transactional.id" : "e2e-member-\#(suffix)""#), "\(text)")
        #expect(text.contains(#""enable.auto.commit" : "false""#), "\(text)")

        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let first = try await broker.waitForLines(1).first ?? ""
        let servers = String(first.dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "ping", "--count", "5"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers], environment: environment)
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "5", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.status == 0, "\(results.stderr)")
        let ids = results.stdout.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["messageId"] as? String }
        #expect(ids.count == 5 && Set(ids).count == 5, "\(results.stdout)")
        // Nothing more arrives: each result was written once.
        let again = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                             "--from-beginning", "--timeout", "2"], timeout: .seconds(30))
        #expect(again.stdout.count == 5, "\(again.stdout)")
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0, "\(service.stderr.suffix(2000))")
        #expect(service.stderr.contains("transactions initialised"), "\(service.stderr.suffix(2000))")
        #expect(service.stderr.contains("exactlyOnce=\"on, transactional.id e2e-member-\(suffix)\""), "\(service.stderr.suffix(2000))")
        broker.signal(SIGINT)
        #expect(try await broker.waitForExit(timeout: .seconds(30)) == 0)
    }
}
