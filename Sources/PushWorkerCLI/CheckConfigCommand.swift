import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker

/// `pushworker check-config [--config FILE]`: validates and prints the effective configuration.
struct CheckConfigCommand {
    let commandLine: PushWorkerCommandLine

    static let help = """
    Usage: pushworker check-config [--config FILE] [--bootstrap-servers HOSTS]

    Validates the configuration as 'run' would load it (file, then environment, then flags; workers against
    permittedTypes; each workerSettings section read by the Swift worker it belongs to) and prints the
    effective configuration as JSON, with secrets masked, including the workers a custom executable
    registers in Swift ("swiftWorkers"). Exit status 1 names the bad key.
    """

    func execute(_ arguments: [String]) throws {
        var parser = ArgumentParser(command: "check-config", options: [
            .init(name: "config", takesValue: true), .init(name: "bootstrap-servers", takesValue: true),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let (configuration, _) = try PushWorkerCommandLine.loadConfiguration(path: parser.value("config"), bootstrapServers: parser.value("bootstrap-servers"))
        let registry = try commandLine.makeRegistry(configuration)  // routes against permittedTypes, as run would
        Output.line(configuration.effectiveDescription(registry: registry))
    }
}
