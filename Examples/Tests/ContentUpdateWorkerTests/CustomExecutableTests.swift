import Foundation
import PushWorkerTesting
import Testing

/// The custom `content-pushworker` executable built by this package, driven as users run it: the whole
/// pushworker command line is there, with the Swift worker registered beside the configured ones.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CustomExecutableTests {
    static let executable = RunningCommand.builtExecutable("content-pushworker")

    static func config(suffix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("content-pushworker-\(suffix).json5").path
        let text = """
        {
          consumer: { "session.timeout.ms": 6000, "fetch.wait.max.ms": 20 },
          groupId: "content-\(suffix)",
          inputTopics: ["pushes-\(suffix)"],
          resultsTopic: "results-\(suffix)",
          permittedTypes: ["content-update", "ping"],
          workers: { "ping": { kind: "noop", result: "newData" } },
          dev: { partitions: 2 },
          httpServer: { port: 0 },  // metrics on any free port: tests may run beside a pushworker on 9400
        }
        """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func devProduceAndResultsRunTheSwiftWorker() async throws {
        let server = try ContentServer(["article-1": "fresh content"])
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let config = try Self.config(suffix: String(suffix))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("content-\(suffix)")
        let dev = try RunningCommand(Self.executable, ["dev", "--config", config],
                                     environment: ["CONTENT_BASE_URL": server.baseURL.absoluteString, "CONTENT_DIRECTORY": directory.path])
        let first = try await dev.waitForLines(1).first ?? ""
        #expect(first.hasPrefix("bootstrap.servers="))
        let servers = String(first.dropFirst("bootstrap.servers=".count))

        let produced = try await RunningCommand.run(Self.executable, [
            "produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "content-update",
            "--set", "contentId=article-1", "--key", "device-1", "--count", "2"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let ping = try await RunningCommand.run(Self.executable, [
            "produce", "--bootstrap-servers", servers, "--topic", "pushes-\(suffix)", "--type", "ping"])
        #expect(ping.status == 0, "\(ping.stderr)")

        // dev prints each result as a JSON line after its first line.
        let lines = try await dev.waitForLines(4, timeout: .seconds(60))
        let results = lines.dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let content = results.filter { $0["type"] as? String == "content-update" }
        #expect(content.compactMap { $0["worker"] as? String } == ["swift:content-update", "swift:content-update"])
        #expect(content.compactMap { $0["result"] as? String } == ["newData", "noData"])
        #expect(content.last?["reason"] as? String == "unchanged")
        #expect(results.first { $0["type"] as? String == "ping" }?["result"] as? String == "newData")
        #expect(try String(contentsOf: directory.appendingPathComponent("article-1"), encoding: .utf8) == "fresh content")

        // The results command of the same executable reads them back from the results topic.
        let read = try await RunningCommand.run(Self.executable, [
            "results", "--bootstrap-servers", servers, "--topic", "results-\(suffix)", "--from-beginning", "--count", "3", "--timeout", "30"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout.count == 3)

        dev.signal(SIGTERM)
        #expect(try await dev.waitForExit(timeout: .seconds(30)) == 0, "\(dev.stderr.suffix(2000))")
    }

    @Test func checkConfigRefusesAMissingBaseURLAndAnUndeclaredType() async throws {
        let config = try Self.config(suffix: "check")
        let missing = try await RunningCommand.run(Self.executable, ["check-config", "--config", config],
                                                   environment: ["CONTENT_BASE_URL": ""])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("CONTENT_BASE_URL"))

        let ok = try await RunningCommand.run(Self.executable, ["check-config", "--config", config],
                                              environment: ["CONTENT_BASE_URL": "https://cdn.example.com/content"])
        #expect(ok.status == 0, "\(ok.stderr)")

        // content-update is registered in Swift: leaving it out of permittedTypes is refused at startup.
        let narrow = FileManager.default.temporaryDirectory.appendingPathComponent("content-pushworker-narrow.json5").path
        try #"{ permittedTypes: ["ping"], workers: { "ping": { kind: "noop" } } }"#.write(toFile: narrow, atomically: true, encoding: .utf8)
        let refused = try await RunningCommand.run(Self.executable, ["check-config", "--config", narrow],
                                                   environment: ["CONTENT_BASE_URL": "https://cdn.example.com/content"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("content-update"), "\(refused.stderr)")
    }

    @Test func theWholeCommandLineIsThere() async throws {
        let help = try await RunningCommand.run(Self.executable, ["--help"])
        for command in ["run", "dev", "produce", "results", "check-config"] {
            #expect(help.stdout.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(command + " ") }, "\(command) missing")
        }
        let badFlag = try await RunningCommand.run(Self.executable, ["run", "--no-such-flag"])
        #expect(badFlag.status == 2)
    }
}
