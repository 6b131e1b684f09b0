import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker

/// `pushworker check-config [--config FILE] [--for run|dev|redrive]`: validates and prints the effective
/// configuration, loaded as the named command would load it.
struct CheckConfigCommand {
    let commandLine: PushWorkerCommandLine

    static let help = """
    Usage: pushworker check-config [--config FILE] [--for run|dev|redrive] [--bootstrap-servers HOSTS]

    Validates the configuration as the command named by --for (default run) would load it (file, then
    environment, then flags; workers against permittedTypes; each workerSettings section read by the Swift
    worker it belongs to) and prints the effective configuration as JSON on stdout, with secrets masked,
    including the workers a custom executable registers in Swift ("swiftWorkers"). stderr names the file
    checked. Exit status 1 names the bad key; for run, a configuration without workers and without a
    defaultWorker is refused too, as run refuses it.

    Options:
      --config FILE               the file to check (default: as the command would choose it: $PUSHWORKER_CONFIG,
                                  else for dev config/pushworker.json5 if it exists, else built-in defaults)
      --for COMMAND               run (default), dev or redrive: whose default file and checks to apply
      -b, --bootstrap-servers HOSTS   Kafka brokers (overrides the file and $PUSHWORKER_BOOTSTRAP_SERVERS)
    """

    func execute(_ arguments: [String]) throws {
        var parser = ArgumentParser(command: "check-config", options: [
            .init(name: "config", takesValue: true), .bootstrapServers, .init(name: "for", takesValue: true),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let target = parser.value("for") ?? "run"
        guard ["run", "dev", "redrive"].contains(target) else {
            throw CommandLineError(.usage, "pushworker check-config: --for must be run, dev or redrive, got '\(target)'")
        }
        let fallback = target == "dev" ? DevCommand.defaultConfigPath : nil
        let (configuration, source) = try PushWorkerCommandLine.loadConfiguration(
            path: parser.value("config"), bootstrapServers: parser.value("bootstrap-servers"), fallbackPath: fallback)
        var checked = "pushworker check-config: checking \(source), as 'pushworker \(target)' would load it"
        if parser.value("config") == nil, target != "dev", source == "built-in defaults", let devFile = DevCommand.defaultConfigPath {
            checked += "; 'pushworker dev' would read \(devFile) (check it with --for dev or --config \(devFile))"
        }
        Output.error(checked)
        let registry = try commandLine.makeRegistry(configuration)  // routes against permittedTypes, as run would
        if target != "redrive", let problem = PushWorkerCommandLine.noWorkersProblem(registry, source: source) {
            if target == "run" { throw CommandLineError(.failure, "pushworker check-config: \(problem)") }
            Output.error("pushworker check-config: warning: \(problem)")
        }
        Output.line(configuration.effectiveDescription(registry: registry))
    }
}
