import Foundation
import PushWorkerCore
import PushWorkerTesting
import Testing

/// The custom `content-pushworker` executable built by this package, driven as users run it: the whole
/// pushworker command line is there, with the Swift worker registered beside the configured ones.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CustomExecutableTests {
    static let executable = RunningCommand.builtExecutable("content-pushworker")

    /// A config file for the executable; `settings` is the `workerSettings` object's JSON5 text, if any.
    static func config(suffix: String, settings: String? = nil) throws -> String {
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
          \(settings.map { "workerSettings: \($0)," } ?? "")
        }
        """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func devProduceAndResultsRunTheSwiftWorker() async throws {
        let server = try ContentServer(["article-1": "fresh content"])
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("content-\(suffix)")
        let config = try Self.config(suffix: String(suffix), settings: #"{ "content-update": { baseURL: "\#(server.baseURL.absoluteString)", directory: "\#(directory.path)" } }"#)
        // No dev bootstrap file: the test's dev must not replace the address of a dev a developer keeps running.
        let dev = try RunningCommand(Self.executable, ["dev", "--config", config], environment: ["PUSHWORKER_DEV_BOOTSTRAP_FILE": ""])
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
        // Without the worker's settings section: its required baseURL is missing, named by its path.
        let missing = try await RunningCommand.run(Self.executable, ["check-config", "--config", try Self.config(suffix: "check")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("invalid configuration: config key 'workerSettings.content-update.baseURL': is missing"), "\(missing.stderr)")

        // A misspelt key, a URL that is not http(s), a section no worker reads: each named by its path.
        let refusals = [
            (#"{ "content-update": { baseUrl: "https://cdn.example.com/content" } }"#,
             "config key 'workerSettings.content-update.baseUrl': is not a setting of ContentUpdateWorker.Settings; known: baseURL, directory, requestTimeout"),
            (#"{ "content-update": { baseURL: "ftp://cdn.example.com/content" } }"#,
             "config key 'workerSettings.content-update.baseURL': must be an http or https URL with a host, got 'ftp://cdn.example.com/content'"),
            (#"{ "content-update": { baseURL: "https://cdn.example.com/content", requestTimeout: "5s" } }"#,
             "config key 'workerSettings.content-update.requestTimeout': must be a duration in milliseconds (an integer), got a string"),
            (#"{ "content-update": { baseURL: "https://cdn.example.com/content" }, "content-updates": {} }"#,
             "config key 'workerSettings.content-updates': no registered worker reads this settings section"),
        ]
        for (index, (settings, message)) in refusals.enumerated() {
            let refused = try await RunningCommand.run(Self.executable, ["check-config", "--config", try Self.config(suffix: "refused-\(index)", settings: settings)])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains(message), "\(refused.stderr)")
        }

        let ok = try await RunningCommand.run(Self.executable, ["check-config", "--config", try Self.config(
            suffix: "check-ok", settings: #"{ "content-update": { baseURL: "https://cdn.example.com/content", requestTimeout: 5000 } }"#)])
        #expect(ok.status == 0, "\(ok.stderr)")
        // The effective configuration shows the section.
        let effective = try JSONDecoder().decode(JSONValue.self, from: Data(ok.stdout.joined(separator: "\n").utf8))
        #expect(effective["workerSettings"]?["content-update"]?["baseURL"] == .string("https://cdn.example.com/content"))

        // content-update is registered in Swift: leaving it out of permittedTypes is refused at startup.
        let narrow = FileManager.default.temporaryDirectory.appendingPathComponent("content-pushworker-narrow.json5").path
        try #"{ permittedTypes: ["ping"], workers: { "ping": { kind: "noop" } }, workerSettings: { "content-update": { baseURL: "https://cdn.example.com/content" } } }"#
            .write(toFile: narrow, atomically: true, encoding: .utf8)
        let refused = try await RunningCommand.run(Self.executable, ["check-config", "--config", narrow])
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
