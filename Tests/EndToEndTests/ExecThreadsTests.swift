import Foundation
import PushWorkerTesting
import Testing

/// Running exec programs cost pushworker no thread each (docs/workers.md, "Exec workers"): one event loop
/// waits for every program's exit, pipes and kill timer.
@Suite(.timeLimit(.minutes(3)))
struct ExecThreadsTests {
    /// 300 programs running at once: the process's thread count stays at most 64 (with a thread per pipe and
    /// per exit it was over 900), and every program's result is `newData`. The programs wait on a FIFO until the
    /// test has counted them (no time window to hit: on a loaded machine the count once missed 8-s sleeps).
    @Test func threeHundredRunningProgramsCostNoThreadEach() async throws {
        let count = 300
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-exec-threads-\(UUID().uuidString)").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        // Each program blocks opening the FIFO to read until the test opens it to write.
        let (suffix, config, broker, servers) = try await Self.brokerWithRecords(count, worker: #"command: ["/bin/cat", "\#(fifo)"], budgetMs: 120000"#)
        let service = try startPushworker(["run", "--config", config, "--bootstrap-servers", servers])
        var running = 0
        var threads = 0
        let deadline = ContinuousClock.now.advanced(by: .seconds(100))
        while ContinuousClock.now < deadline {
            running = Self.children(of: service.pid)
            threads = Self.threads(of: service.pid)
            if running >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(running >= count, "programs running at once: \(running); \(service.stderr.suffix(1500))")
        // A writer's open ends the readers' opens, and its close gives them end of file: they exit.
        while ContinuousClock.now < deadline, Self.children(of: service.pid) > 0 {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(threads <= 64, "\(threads) threads with \(running) programs running")
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "\(count)", "--timeout", "90"], timeout: .seconds(120))
        #expect(results.stdout.count == count)
        #expect(results.stdout.allSatisfy { $0.contains(#""result":"newData""#) }, "\(results.stdout.first { !$0.contains("newData") } ?? "")")
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// Under an open-file limit too small for every program's pipes at once (`prlimit --nofile=120:120`, which
    /// pushworker cannot raise), 80 programs still all run and give `newData`: a program that finds no
    /// descriptor left waits for running ones to end, and pushworker warns about it once.
    @Test func programsWaitForDescriptorsInsteadOfFailing() async throws {
        let count = 80
        let (suffix, config, broker, servers) = try await Self.brokerWithRecords(count, worker: #"command: ["/bin/sh", "-c", "sleep 1"], budgetMs: 90000"#)
        let service = try RunningCommand(URL(fileURLWithPath: "/usr/bin/prlimit"),
                                         ["--nofile=120:120", PushWorkerExecutable.url.path, "run", "--config", config, "--bootstrap-servers", servers],
                                         environment: testEnvironment([:]))
        let results = try await runPushworker(["results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)",
                                               "--from-beginning", "--count", "\(count)", "--timeout", "90"], timeout: .seconds(120))
        #expect(results.stdout.count == count, "\(service.stderr.suffix(2000))")
        #expect(results.stdout.allSatisfy { $0.contains(#""result":"newData""#) }, "\(results.stdout.first { !$0.contains("newData") } ?? "")")
        #expect(service.stderr.contains("no file descriptor left for a program's pipes"), "\(service.stderr.suffix(2000))")
        service.signal(SIGTERM)
        #expect(try await service.waitForExit(timeout: .seconds(30)) == 0)
        broker.signal(SIGTERM)
        _ = try await broker.waitForExit()
    }

    /// A broker (`pushworker dev --broker-only`) holding `count` records of type `sleepy`, and a configuration
    /// with `maxInFlight` `count` and an exec worker for them (`worker`: the declaration after `kind: "exec"`).
    static func brokerWithRecords(_ count: Int, worker: String) async throws -> (suffix: String, config: String, broker: RunningCommand, servers: String) {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(
            suffix: suffix, workers: #""sleepy": { kind: "exec", "# + worker + " }", extra: "maxInFlight: \(count),"))
        let broker = try startPushworker(["dev", "--broker-only", "--config", config])
        let servers = String((try await broker.waitForLines(1).first ?? "").dropFirst("bootstrap.servers=".count))
        let produced = try await runPushworker(["produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "sleepy",
                                                "--count", "\(count)"])
        #expect(produced.status == 0, "\(produced.stderr)")
        return (suffix, config, broker, servers)
    }

    /// The children of `pid`, over all its threads (`/proc/PID/task/TID/children`).
    static func children(of pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text = readProcText("/proc/\(pid)/task/\(task)/children") ?? ""
            return total + text.split(separator: " ").count
        }
    }

    /// The `Threads:` line of `/proc/PID/status`.
    static func threads(of pid: pid_t) -> Int {
        let status = readProcText("/proc/\(pid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
        return line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }
}
