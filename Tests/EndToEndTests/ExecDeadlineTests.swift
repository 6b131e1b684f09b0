import Foundation
import PushWorkerTesting
import Testing

/// At the deadline the exec worker's program and its descendants stop, also those that left its process
/// group (docs/guarantees.md, "Exec programs").
@Suite(.timeLimit(.minutes(2)))
struct ExecDeadlineTests {
    /// A program that starts `setsid sleep 60` (a new session and process group, which the signal to the
    /// program's group misses) and then runs past its 1 s budget: its result is `failed`/`timeout`, and the
    /// `sleep` is gone within the grace (500 ms) and a few seconds.
    @Test func aDescendantThatCalledSetsidStopsAtTheDeadline() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-stray-\(suffix)").path
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: String(suffix),
            workers: #""stray": { kind: "exec", command: ["/bin/sh", "-c", "setsid sleep 60 & echo $! > \#(pidFile); sleep 60"], budgetMs: 1000, terminationGraceMs: 500 }"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "stray"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "1", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.stdout.first?.contains(#""reason":"timeout""#) == true, "\(results.stdout) \(service.stderr.suffix(1500))")
        let text = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
        let stray = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(stray != nil, "the program wrote its child's pid: \(text.debugDescription)")
        if let stray {
            let gone = await eventually(timeout: .seconds(10)) { !Self.isAlive(stray) }
            #expect(gone, "the setsid child \(stray) outlived the deadline and the grace")
            if !gone { kill(stray, SIGKILL) }
        }
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// Whether `pid` runs (a zombie, ended but not reaped yet by its new parent, counts as ended).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = readProcText("/proc/\(pid)/stat"),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }
}
