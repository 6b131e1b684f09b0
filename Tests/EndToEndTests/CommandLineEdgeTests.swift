import Foundation
import PushWorkerTesting
import Testing

/// The rough edges a new user hit (issue 12), through the built executable: each fails clearly, fast, and
/// says what to do. Each test takes seconds.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommandLineEdgeTests {
    /// A loopback port nothing listens on: the kernel picked it for a socket that is closed again.
    static func closedPort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func runWithoutWorkersRefusesToStartNamingTheKeys() async throws {
        let config = try CommandLineTests.writeConfig(#"{ groupId: "g", httpServer: { enabled: false } }"#)
        let run = try await runPushworker(["run", "--config", config, "-b", "127.0.0.1:1"], timeout: .seconds(30))
        #expect(run.status == 1)
        let last = run.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("pushworker run: no workers in the configuration (\(config)), so every push would get noData/noWorker"), "\(run.stderr)")
        #expect(last.contains("'workers'") && last.contains("'defaultWorker'"))
        // check-config says the same for run, and only warns for dev.
        let checked = try await runPushworker(["check-config", "--config", config])
        #expect(checked.status == 1)
        #expect(checked.stderr.contains("checking \(config), as 'pushworker run' would load it"))
        let forDev = try await runPushworker(["check-config", "--config", config, "--for", "dev"])
        #expect(forDev.status == 0)
        #expect(forDev.stderr.contains("warning: no workers in the configuration"))
        // dev starts anyway (a sandbox to try things in), with the same words as a warning.
        let dev = try startPushworker(["dev", "--config", config])
        #expect(try await dev.waitForLines(1)[0].hasPrefix("bootstrap.servers="))
        #expect(dev.stderr.contains("warning [pushworker.dev] no workers in the configuration (\(config))"), "\(dev.stderr)")
        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test func produceResultsAndRedriveWithoutABrokerFailInMoments() async throws {
        let servers = "127.0.0.1:\(try Self.closedPort())"
        for arguments in [["produce", "--type", "ping"], ["results", "--from-beginning"], ["redrive", "--topic", "dead", "--dry-run"]] {
            let start = ContinuousClock.now
            let failed = try await runPushworker(arguments + ["--bootstrap-server", servers], timeout: .seconds(20))
            #expect(start.duration(to: .now) < .seconds(8), "\(arguments[0]) took \(start.duration(to: .now))")
            #expect(failed.status == 1, "\(arguments[0]): \(failed.stderr)")
            let lines = failed.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line, no librdkafka noise: \(failed.stderr)")
            #expect(failed.stderr.hasPrefix("pushworker \(arguments[0]): no broker at \(servers) — is `pushworker dev` running? its port changes each start"), "\(failed.stderr)")
            #expect(failed.stderr.contains("Connection refused"))
        }
    }

    @Test func devLeavesItsAddressForTheOtherCommands() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-dev-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("dev-bootstrap").path
        let environment = ["PUSHWORKER_DEV_BOOTSTRAP_FILE": file, "PUSHWORKER_BOOTSTRAP_SERVERS": ""]
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try CommandLineTests.writeConfig(CommandLineTests.config(suffix: String(suffix), workers: #""ping": { kind: "noop" }"#, extra: "dev: { partitions: 1 },"))
        let dev = try startPushworker(["dev", "--broker-only", "--config", config], environment: environment)
        let servers = String(try await dev.waitForLines(1)[0].dropFirst("bootstrap.servers=".count))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "bootstrap.servers=\(servers)\npid=\(dev.pid)\n")

        // No --bootstrap-servers: produce and results find the running dev.
        let produced = try await runPushworker(["produce", "--topic", "results-\(suffix)", "--count", "2", "--verbose"], environment: environment)
        #expect(produced.status == 0, "\(produced.stderr)")
        // Sends run concurrently: which record got which offset is not fixed.
        let placed = produced.stdout.dropLast().map { $0.replacingOccurrences(of: #"offset \d+$"#, with: "offset N", options: .regularExpression) }
        #expect(Set(placed) == ["record 1: results-\(suffix) partition 0 offset N", "record 2: results-\(suffix) partition 0 offset N"], "\(produced.stdout)")
        #expect(produced.stdout.last == "delivered=2 failed=0 topic=results-\(suffix)")
        // -e: what the topic holds, then exit 0, long before the 60 s timeout.
        let start = ContinuousClock.now
        let read = try await runPushworker(["results", "--topic", "results-\(suffix)", "--from-beginning", "-e", "--timeout", "60"], environment: environment)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout.count == 2)
        #expect(start.duration(to: .now) < .seconds(20))
        let missing = try await runPushworker(["results", "--topic", "results-\(suffix)x", "-e"], environment: environment)
        #expect(missing.stderr.contains("warning: topic 'results-\(suffix)x' does not exist (yet); did you mean 'results-\(suffix)'?"), "\(missing.stderr)")

        // A second dev while the first runs: the first one's address stays in the file, also after the
        // second stops, and the second says so.
        let second = try startPushworker(["dev", "--broker-only", "--config", config], environment: environment)
        let secondServers = String(try await second.waitForLines(1)[0].dropFirst("bootstrap.servers=".count))
        #expect(secondServers != servers)
        _ = try await second.waitForStderr(containing: "another pushworker dev is running", timeout: .seconds(30))
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(30)) == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "bootstrap.servers=\(servers)\npid=\(dev.pid)\n")

        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0)
        #expect(!FileManager.default.fileExists(atPath: file), "a stopped dev takes its address back")
        let after = try await runPushworker(["produce", "--type", "ping"], environment: environment)
        #expect(after.status == 2)
        #expect(after.stderr.contains("--bootstrap-servers HOSTS is required"))
    }

    @Test func helpAliasesAndDidYouMean() async throws {
        for command in ["run", "dev", "produce", "results", "redrive", "check-config", "bench"] {
            let short = try await runPushworker([command, "-h"])
            #expect(short.status == 0)
            #expect(short.stdout.first?.hasPrefix("Usage: pushworker \(command)") == true)
            let help = try await runPushworker(["help", command])
            #expect(help.status == 0)
            #expect(help.stdout == short.stdout)
        }
        let overview = try await runPushworker(["help", "help"])
        #expect(overview.status == 0)
        #expect(overview.stdout.first?.hasPrefix("pushworker: runs silent-push jobs") == true)
        let command = try await runPushworker(["reslts"])
        #expect(command.status == 2)
        #expect(command.stderr.contains("unknown command 'reslts' (did you mean 'results'?)"))
        let option = try await runPushworker(["produce", "--bootstrap-sever", "x:1"])
        #expect(option.status == 2)
        #expect(option.stderr.contains("unknown option '--bootstrap-sever' (did you mean '--bootstrap-servers'?)"))
        let unknownHelp = try await runPushworker(["help", "prodcue"])
        #expect(unknownHelp.status == 2)
        #expect(unknownHelp.stderr.contains("did you mean 'produce'?"))
    }

    @Test func checkConfigNamesTheFileAndSyntaxErrorsTheirPosition() async throws {
        // From the repository root: check-config checks what run reads (built-in defaults here) and names
        // the file dev would read; --for dev checks that file.
        let forRun = try startPushworker(["check-config"], environment: ["PUSHWORKER_CONFIG": ""], directory: PushWorkerExecutable.packageRoot)
        #expect(try await forRun.waitForExit() == 1)
        #expect(forRun.stderr.contains("checking built-in defaults, as 'pushworker run' would load it; 'pushworker dev' would read config/pushworker.json5"), "\(forRun.stderr)")
        let forDev = try startPushworker(["check-config", "--for", "dev"], environment: ["PUSHWORKER_CONFIG": ""], directory: PushWorkerExecutable.packageRoot)
        #expect(try await forDev.waitForExit() == 0, "\(forDev.stderr)")
        #expect(forDev.stderr.contains("checking config/pushworker.json5, as 'pushworker dev' would load it"))
        #expect(forDev.stdoutLines.joined().contains("content-update"))

        let broken = try CommandLineTests.writeConfig("{\n  groupId: \"g\"\n  workers: { ping: { kind: \"noop\" } },\n}\n")
        let checked = try await runPushworker(["check-config", "--config", broken])
        #expect(checked.status == 1)
        #expect(checked.stderr.contains("\(broken) is not valid JSON5: line 3, column 3 (at groupId): expected ',' or '}' after the value of 'groupId', found 'w'"), "\(checked.stderr)")
    }

    @Test func produceFileWarnsAboutLinesThatAreNotObjectsAndSaysWhyAFileCannotBeRead() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-file-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = try await runPushworker(["produce", "-b", "127.0.0.1:1", "--file", directory.appendingPathComponent("nope.jsonl").path])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot read \(directory.path)/nope.jsonl: No such file or directory"), "\(missing.stderr)")

        let cluster = try startPushworker(["dev", "--broker-only", "--config", try CommandLineTests.writeConfig(#"{ workers: { a: { kind: "noop" } }, dev: { partitions: 1 } }"#)])
        let servers = String(try await cluster.waitForLines(1)[0].dropFirst("bootstrap.servers=".count))
        let pretty = directory.appendingPathComponent("push.json").path
        try "{\n  \"aps\": {\"content-available\": 1},\n  \"type\": \"ping\"\n}\n".write(toFile: pretty, atomically: true, encoding: .utf8)
        let sent = try await runPushworker(["produce", "-b", servers, "--topic", "pushes", "--file", pretty, "--verbose"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.last == "delivered=4 failed=0 topic=pushes", "still sent: invalid records are test input")
        for line in 1...4 { #expect(sent.stderr.contains("warning: \(pretty) line \(line) is not a JSON object"), "\(sent.stderr)") }
        #expect(sent.stderr.contains("holds one JSON object over 4 lines"))
        let placed = sent.stdout.dropLast().map { $0.replacingOccurrences(of: #"offset \d+$"#, with: "offset N", options: .regularExpression) }
        #expect(Set(placed) == Set((1...4).map { "line \($0): pushes partition 0 offset N" }), "\(sent.stdout)")
        cluster.signal(SIGTERM)
        _ = try await cluster.waitForExit()
    }
}
