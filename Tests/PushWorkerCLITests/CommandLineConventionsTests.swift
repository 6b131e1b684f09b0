import Foundation
import PushWorker
@testable import PushWorkerCLI
import PushWorkerCore
import Testing

/// Pure logic of the command line's conventions: short options and aliases, "did you mean", the dev bootstrap
/// file, where the brokers come from, the produce --file warnings and the results topic warning.
struct CommandLineConventionsTests {
    @Test func shortOptionsAndAliasesLandOnTheMainName() throws {
        var parser = ArgumentParser(command: "results", options: [.bootstrapServers, .init(name: "exit-at-end", takesValue: false, short: "e")])
        try parser.parse(["-b", "127.0.0.1:1", "-e", "-h"])
        #expect(parser.value("bootstrap-servers") == "127.0.0.1:1")
        #expect(parser.has("exit-at-end") && parser.has("help"))
        for spelling in [["--bootstrap-server", "h:1"], ["--bootstrap-server=h:1"], ["-bh:1"], ["-b=h:1"], ["--bootstrap-servers", "h:1"]] {
            var parser = ArgumentParser(command: "produce", options: [.bootstrapServers])
            try parser.parse(spelling)
            #expect(parser.value("bootstrap-servers") == "h:1", "\(spelling)")
        }
        var twice = ArgumentParser(command: "produce", options: [.bootstrapServers])
        #expect(throws: CommandLineError.self) { try twice.parse(["-b", "a:1", "--bootstrap-server", "b:1"]) }
    }

    @Test func unknownOptionsSuggestTheClosestOne() {
        func message(_ arguments: [String]) -> String {
            var parser = ArgumentParser(command: "produce", options: [.bootstrapServers, .init(name: "count", takesValue: true), .init(name: "file", takesValue: true)])
            do {
                try parser.parse(arguments)
                return ""
            } catch let error as CommandLineError {
                #expect(error.code == .usage)
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(message(["--bootstrap-sever", "x"]) == "pushworker produce: unknown option '--bootstrap-sever' (did you mean '--bootstrap-servers'?); see 'pushworker produce --help'")
        #expect(message(["--cout", "1"]).contains("did you mean '--count'?"))
        #expect(message(["--boot", "x"]).contains("did you mean '--bootstrap-servers'?"))
        #expect(message(["--frobnicate"]) == "pushworker produce: unknown option '--frobnicate'; see 'pushworker produce --help'")
        #expect(message(["-x"]) == "pushworker produce: unknown option '-x'; see 'pushworker produce --help'")
    }

    @Test func commandSuggestions() {
        let commands = PushWorkerCommandLine.commands
        #expect(Suggestion.closest(to: "reslts", among: commands) == "results")
        #expect(Suggestion.closest(to: "chek-config", among: commands) == "check-config")
        #expect(Suggestion.closest(to: "prodcue", among: commands) == "produce")
        #expect(Suggestion.closest(to: "redriv", among: commands) == "redrive")
        #expect(Suggestion.closest(to: "frobnicate", among: commands) == nil)
        #expect(Suggestion.closest(to: "", among: commands) == nil)
        #expect(PushWorkerCommandLine.commandHint("rnu") == " (did you mean 'run'?)")
        #expect(Suggestion.distance("kitten", "sitting") == 3)
        #expect(Suggestion.distance("ab", "ba") == 1)
    }

    @Test func devBootstrapFileLocationContentsAndLiveness() throws {
        #expect(DevBootstrapFile.path(environment: ["PUSHWORKER_DEV_BOOTSTRAP_FILE": "/x/f", "XDG_RUNTIME_DIR": "/run/user/1"]) == "/x/f")
        #expect(DevBootstrapFile.path(environment: ["PUSHWORKER_DEV_BOOTSTRAP_FILE": "", "XDG_RUNTIME_DIR": "/run/user/1"]) == nil)
        #expect(DevBootstrapFile.path(environment: ["XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/home/u"]) == "/run/user/1/pushworker/dev-bootstrap")
        #expect(DevBootstrapFile.path(environment: ["HOME": "/home/u"]) == "/home/u/.pushworker/dev-bootstrap")
        #expect(DevBootstrapFile.path(environment: [:]) == nil)
        #expect(DevBootstrapFile.parse("bootstrap.servers=127.0.0.1:4000\npid=42\n")! == ("127.0.0.1:4000", 42))
        #expect(DevBootstrapFile.parse("pid=42\n") == nil)
        #expect(DevBootstrapFile.parse("bootstrap.servers=127.0.0.1:4000\n") == nil)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-devfile-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["PUSHWORKER_DEV_BOOTSTRAP_FILE": directory + "/sub/dev-bootstrap"]
        let path = try #require(try DevBootstrapFile.write(servers: "127.0.0.1:4001", environment: environment))
        #expect(DevBootstrapFile.read(environment: environment)?.servers == "127.0.0.1:4001")
        // This process is alive: the file counts; one naming a process that has ended does not.
        try DevBootstrapFile.contents(servers: "127.0.0.1:4002", pid: Int32.max - 1).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(DevBootstrapFile.read(environment: environment) == nil)
        // remove() leaves another process's file alone and removes its own.
        DevBootstrapFile.remove(path)
        #expect(FileManager.default.fileExists(atPath: path))
        _ = try DevBootstrapFile.write(servers: "127.0.0.1:4003", environment: environment)
        DevBootstrapFile.remove(path)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func brokersComeFromTheFlagThenTheEnvironmentThenTheConfigurationThenARunningDev() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-devfile-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ["PUSHWORKER_DEV_BOOTSTRAP_FILE": directory + "/dev-bootstrap"]
        #expect(throws: CommandLineError.self) { try BrokerAddress.resolve(flag: nil, command: "produce", environment: environment) }
        _ = try DevBootstrapFile.write(servers: "127.0.0.1:5000", environment: environment)
        #expect(try BrokerAddress.resolve(flag: nil, command: "produce", environment: environment).servers == "127.0.0.1:5000")
        #expect(try BrokerAddress.resolve(flag: nil, command: "redrive", configured: "kafka:9092", environment: environment).servers == "kafka:9092")
        environment["PUSHWORKER_BOOTSTRAP_SERVERS"] = "env:9092"
        #expect(try BrokerAddress.resolve(flag: nil, command: "produce", environment: environment) == BrokerAddress(servers: "env:9092", origin: "$PUSHWORKER_BOOTSTRAP_SERVERS"))
        #expect(try BrokerAddress.resolve(flag: "flag:9092", command: "produce", environment: environment).servers == "flag:9092")
    }

    @Test func theNoBrokerMessageHintsAtDevOnlyForLoopback() {
        #expect(BrokerAddress.isLoopback("127.0.0.1:40261"))
        #expect(BrokerAddress.isLoopback("localhost:9092,127.0.0.2:9093"))
        #expect(BrokerAddress.isLoopback("[::1]:9092"))
        #expect(!BrokerAddress.isLoopback("kafka-0.kafka:9092"))
        #expect(!BrokerAddress.isLoopback("127.0.0.1:9092,kafka:9092"))
        let local = BrokerAddress(servers: "127.0.0.1:1", origin: "--bootstrap-servers").noBrokerMessage(command: "produce", reason: "Connection refused")
        #expect(local.hasPrefix("pushworker produce: no broker at 127.0.0.1:1 — is `pushworker dev` running? its port changes each start"))
        #expect(local.hasSuffix("(librdkafka: Connection refused)"))
        let remote = BrokerAddress(servers: "kafka:9092", origin: "$PUSHWORKER_BOOTSTRAP_SERVERS").noBrokerMessage(command: "results", reason: "x")
        #expect(remote.hasPrefix("pushworker results: no broker at kafka:9092 (from $PUSHWORKER_BOOTSTRAP_SERVERS); check the address"))
    }

    @Test func produceFileWarnsPerLineThatIsNotAJSONObject() {
        let pretty = InputLines(Data("{\n  \"aps\": {\"content-available\": 1},\n  \"type\": \"ping\"\n}\n".utf8))
        #expect(pretty.lines.map(\.number) == [1, 2, 3, 4])
        let warnings = pretty.warnings(file: "push.json")
        #expect(warnings.count == 5, "\(warnings)")
        #expect(warnings[0].hasPrefix("pushworker produce: warning: push.json line 1 is not a JSON object"))
        #expect(warnings[3].contains("push.json line 4 is not a JSON object"))
        #expect(warnings[4].contains("holds one JSON object over 4 lines") && warnings[4].contains("jq -c . push.json"))

        let jsonl = InputLines(Data("{\"aps\":{\"content-available\":1}}\r\n\n[1]\nnot json\n{\"aps\":{\"content-available\":0}}".utf8))
        #expect(jsonl.lines.map(\.number) == [1, 3, 4, 5])
        #expect(jsonl.lines[0].value == Array(#"{"aps":{"content-available":1}}"#.utf8))
        let lineWarnings = jsonl.warnings(file: "stdin")
        #expect(lineWarnings.count == 2, "notSilent is a valid record: no warning")
        #expect(lineWarnings[0].contains("stdin line 3 ") && lineWarnings[1].contains("stdin line 4 "))

        let many = InputLines(Data(String(repeating: "x\n", count: 25).utf8)).warnings(file: "f")
        #expect(many.count == InputLines.warnedLines + 1)
        #expect(many.last == "pushworker produce: warning: 5 more lines of f are not JSON objects (25 in all); sent as is")
    }

    @Test func aFileThatCannotBeReadSaysWhy() {
        #expect(throws: CommandLineError(.failure, "pushworker produce: cannot read /nonexistent/pushes.jsonl: No such file or directory")) {
            try InputLines.read("/nonexistent/pushes.jsonl", command: "produce")
        }
        #expect(throws: CommandLineError(.failure, "pushworker produce: cannot read /: Is a directory")) {
            try InputLines.read("/", command: "produce")
        }
    }

    @Test func aMissingResultsTopicIsNamedWithTheClosestOne() {
        #expect(ResultsCommand.missingTopicWarning("push-reslts", known: ["__consumer_offsets", "push-results", "pushes"])
            == "pushworker results: warning: topic 'push-reslts' does not exist (yet); did you mean 'push-results'?")
        #expect(ResultsCommand.missingTopicWarning("zzz", known: ["a", "b"]) == "pushworker results: warning: topic 'zzz' does not exist (yet); its topics: a, b")
        #expect(ResultsCommand.missingTopicWarning("zzz", known: []) == "pushworker results: warning: topic 'zzz' does not exist (yet); the cluster has no topics yet")
    }

    @Test func aRegistryWithoutWorkersIsNamedWithTheKeysToSet() throws {
        #expect(PushWorkerCommandLine.noWorkersProblem(ServiceConfiguration().makeRegistry(), source: "built-in defaults")?
            .hasPrefix("no workers in the configuration (built-in defaults), so every push would get noData/noWorker; declare workers by payload type under 'workers'") == true)
        let withDefault = try ServiceConfiguration.load(json5: Data(#"{ defaultWorker: { kind: "noop" } }"#.utf8), environment: [:])
        #expect(PushWorkerCommandLine.noWorkersProblem(withDefault.makeRegistry(), source: "f") == nil)
        let withType = try ServiceConfiguration.load(json5: Data(#"{ workers: { ping: { kind: "noop" } } }"#.utf8), environment: [:])
        #expect(PushWorkerCommandLine.noWorkersProblem(withType.makeRegistry(), source: "f") == nil)
    }
}
