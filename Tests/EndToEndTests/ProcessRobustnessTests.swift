import Foundation
import PushWorkerCore
import PushWorkerTesting
import Testing

/// Signals at any moment after `main` starts, and closed or broken stdout and stderr (issue: no record or
/// accident of the process's surroundings may crash the service).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ProcessRobustnessTests {
    /// Whether `pid` catches `signal` now (bit `signal - 1` of `SigCgt` in `/proc/PID/status`).
    static func catches(_ pid: Int32, _ signal: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
              let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << UInt64(signal - 1)) != 0
    }

    /// A configuration file for `run` with unique names (HTTP server on `http`).
    static func runConfig(suffix: String, http: String = "httpServer: { enabled: false },") throws -> String {
        try CommandLineTests.writeConfig(CommandLineTests.config(suffix: suffix, workers: #""ping": { kind: "noop", result: "newData" }"#, http: http))
    }

    /// SIGTERM or SIGINT sent the moment pushworker's handler is in place (its first instruction of `main`),
    /// and at short delays after it, always gives the graceful exit 0 — never the signal's default action.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalRightAfterLaunchStopsGracefully(signal: Int32) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.runConfig(suffix: String(suffix))
        for delayMs in [0, 1, 3, 10, 30] {
            let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", "127.0.0.1:1"])
            let deadline = ContinuousClock.now.advanced(by: .seconds(20))
            // Poll without sleeping: the point is to signal as early as the process allows.
            while !Self.catches(service.pid, signal) && service.isRunning && ContinuousClock.now < deadline {}
            #expect(Self.catches(service.pid, signal), "pushworker never installed a handler for signal \(signal)")
            if delayMs > 0 { try await Task.sleep(for: .milliseconds(delayMs)) }
            service.signal(signal)
            let status = try await service.waitForExit(timeout: .seconds(30))
            #expect(service.terminationSignal == nil && status == 0,
                    "signal \(signal) \(delayMs) ms after the handler: status \(status), signal \(String(describing: service.terminationSignal)); \(service.stderr.suffix(1500))")
        }
    }

    /// A signal that arrives before pushworker's first instruction (here: sent while the launcher has it
    /// blocked, so it waits pending across `exec`) is handled as soon as `main` starts: a graceful exit 0.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalPendingAtLaunchStopsGracefully(signal: Int32) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.runConfig(suffix: String(suffix))
        let launcher = """
        import os, signal, sys
        signal.pthread_sigmask(signal.SIG_BLOCK, [\(signal)])
        os.kill(os.getpid(), \(signal))
        os.execv(sys.argv[1], sys.argv[1:])
        """
        let service = try RunningCommand(URL(fileURLWithPath: "/usr/bin/env"), [
            "python3", "-c", launcher, PushWorkerExecutable.url.path, "run", "--config", config, "--bootstrap-servers", "127.0.0.1:1",
        ])
        let status = try await service.waitForExit(timeout: .seconds(30))
        #expect(status == 0 && service.terminationSignal == nil,
                "status \(status), signal \(String(describing: service.terminationSignal)); \(service.stderr.suffix(1500))")
        #expect(service.stderr.contains("shutdown requested"))
    }

    /// A second signal ends the process at once with 130, while the graceful stop still waits for a
    /// running job.
    @Test func aSecondSignalExits130() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-started-\(suffix)").path
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: String(suffix),
            workers: #""slow": { kind: "exec", command: ["/bin/sh", "-c", "touch \#(marker); sleep 20; echo newData"] }"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        #expect(try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "slow"]).status == 0)
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let started = await eventually(timeout: .seconds(60)) { FileManager.default.fileExists(atPath: marker) }
        #expect(started, "\(service.stderr.suffix(2000))")
        service.signal(SIGTERM)
        let stopping = await eventually(timeout: .seconds(20)) { service.stderr.contains("shutdown requested") }
        #expect(stopping)
        service.signal(SIGINT)
        #expect(try await service.waitForExit(timeout: .seconds(10)) == 130, "\(service.stderr.suffix(1500))")
        #expect(service.stderr.contains("pushworker: second signal, exiting now"))
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// An exec worker's program starts with SIGTERM, SIGINT and SIGPIPE at their default actions and
    /// nothing blocked, although pushworker catches them: so the SIGTERM at the budget's deadline reaches it.
    @Test func execProgramsStartWithDefaultSignalDispositions() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-signals-\(suffix).txt").path
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: String(suffix),
            workers: #""probe": { kind: "exec", command: ["/bin/sh", "-c", "grep -E '^Sig(Ign|Blk):' /proc/self/status > \#(report); echo newData"] }"#))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "probe"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "1", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.stdout.first?.contains(#""result":"newData""#) == true, "\(results.stdout) \(service.stderr.suffix(2000))")
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        for line in lines {
            let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16) ?? .max
            for signal in [SIGTERM, SIGINT, SIGPIPE] {
                #expect(mask & (1 << UInt64(signal - 1)) == 0, "signal \(signal) is ignored or blocked in the program: \(line)")
            }
        }
        #expect(lines.count == 2)
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// `run … 2>&-`: every log line fails to be written; the service still consumes, produces results,
    /// counts the dropped lines on /metrics and stops gracefully.
    @Test func aClosedStderrNeverStopsTheService() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let port = try LoopbackPort.free()
        let config = try Self.runConfig(suffix: String(suffix), http: #"httpServer: { host: "127.0.0.1", port: \#(port) },"#)
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "ping", "--count", "3"])
        #expect(produced.status == 0)
        let service = try RunningCommand(URL(fileURLWithPath: "/bin/sh"), [
            "-c", #"exec "$0" "$@" 2>&-"#, PushWorkerExecutable.url.path, "run", "--config", config, "--bootstrap-servers", servers,
        ])
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "3", "--timeout", "60"], timeout: .seconds(90))
        #expect(results.stdout.count == 3)
        #expect(service.isRunning)
        var metrics = ""
        let counted = await eventually(timeout: .seconds(20)) {
            metrics = (try? await httpGet("http://127.0.0.1:\(port)/metrics").body) ?? ""
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("pushworker_log_lines_dropped_total ") }
            return (line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0) >= 2
        }
        #expect(counted, "\(metrics.split(separator: "\n").filter { $0.contains("dropped") })")
        service.signal(SIGTERM)
        let status = try await service.waitForExit(timeout: .seconds(30))
        #expect(status == 0 && service.terminationSignal == nil, "status \(status), signal \(String(describing: service.terminationSignal))")
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// stderr a pipe whose reader has gone: writes fail with EPIPE (no SIGPIPE death), the service runs on.
    @Test func aBrokenStderrPipeNeverStopsTheService() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.runConfig(suffix: String(suffix))
        // Its stdin is this process's (as a shell would leave it), stdout /dev/null, stderr a pipe closed at once.
        let process = try ChildProcess(program: PushWorkerExecutable.url.path,
                                       arguments: ["run", "--config", config, "--bootstrap-servers", "127.0.0.1:1"],
                                       environment: ProcessInfo.processInfo.environment, stdin: .inherit, stdout: .nullDevice, stderr: .pipe)
        process.stderr?.close()
        // librdkafka logs a failed connection to 127.0.0.1:1 within a second or two: those writes hit EPIPE.
        try await Task.sleep(for: .seconds(3))
        #expect(process.isRunning, "pushworker died: \(String(describing: process.termination))")
        process.signal(SIGTERM)
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.termination == .exited(0), "\(String(describing: process.termination))")
        if process.isRunning { process.signal(SIGKILL) }
    }

    /// `results … | head -1`: once the reader has gone the command ends quietly by SIGPIPE, as `cat` does;
    /// `results … >&-` ends with status 1 and one line on stderr; neither crashes.
    @Test func aClosedStdoutEndsTheCommandQuietly() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.runConfig(suffix: String(suffix))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        // Records to print: about 400 KB of lines, far more than a pipe holds (64 KiB), so the command is
        // still writing when the reader goes away.
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "results-\(suffix)", "--count", "5000"])
        #expect(produced.status == 0)
        let exe = PushWorkerExecutable.url.path
        let results = ["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)", "--from-beginning", "--count", "5000", "--timeout", "60"]

        let status = try RunningCommand(URL(fileURLWithPath: "/bin/bash"), [
            "-c", #""$0" "$@" 2>/dev/null | head -n 1 > /dev/null; echo "${PIPESTATUS[0]}""#, exe,
        ] + results)
        let lines = try await status.waitForLines(1, timeout: .seconds(60))
        #expect(lines.first == "141", "status of results | head -1: \(lines)")
        #expect(!status.stderr.contains("Fatal error"))

        let closed = try RunningCommand(URL(fileURLWithPath: "/bin/sh"), ["-c", #"exec "$0" "$@" >&-"#, exe] + results)
        #expect(try await closed.waitForExit(timeout: .seconds(60)) == 1, "\(closed.stderr.suffix(1000))")
        #expect(closed.terminationSignal == nil)
        #expect(closed.stderr.contains("pushworker: cannot write to stdout: Bad file descriptor"), "\(closed.stderr.suffix(1000))")
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }
}
