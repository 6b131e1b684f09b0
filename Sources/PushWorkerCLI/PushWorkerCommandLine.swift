import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import Synchronization

/// The `pushworker` command line (contract section 5): `run`, `dev`, `produce`, `results`, `redrive`, `check-config`
/// and `bench`.
///
/// A custom executable that adds Swift workers builds one with a `registerWorkers` closure and calls
/// ``main(_:)``; the whole command line stays the same.
public struct PushWorkerCommandLine: Sendable {
    /// Adds workers to the registry built from the configuration (called by `run`, `dev`, `check-config`
    /// and `bench`). An error it throws (e.g. a missing setting of the worker's own) stops the command
    /// with exit status 1 and the error's description on stderr.
    public var registerWorkers: @Sendable (inout WorkerRegistry, ServiceConfiguration) throws -> Void

    /// Creates the command line.
    /// - Parameter registerWorkers: adds Swift workers beside the configured ones (default: none); may
    ///   throw to refuse to start.
    public init(registerWorkers: @escaping @Sendable (inout WorkerRegistry, ServiceConfiguration) throws -> Void = { _, _ in }) {
        self.registerWorkers = registerWorkers
    }

    static let usage = """
    pushworker: runs silent-push jobs from Kafka and reports newData / noData / failed results.

    Usage: pushworker <command> [options]

    Commands:
      run            the service: consume pushes, run workers, produce results (SIGTERM/SIGINT: graceful stop)
      dev            an embedded Kafka cluster plus the service; prints results as JSON lines
      produce        send APNs-style background payloads to a topic
      results        print result records, one JSON object per line
      redrive        send dead letters back to their input topic once their cause is fixed (--dry-run lists them)
      check-config   validate a configuration file and print the effective configuration
      bench          measure throughput and latency on the embedded cluster with the noop worker

    'pushworker help <command>' (or 'pushworker <command> --help' / '-h') describes a command.
    Exit status: 0 ok, 1 runtime failure, 2 bad flags.
    """

    /// The command names, for `help <command>` and "did you mean".
    static let commands = ["run", "dev", "produce", "results", "redrive", "check-config", "bench", "help", "version"]

    /// Prepares the process for the command line; call it as the first statement of `main.swift`, before
    /// any `await`:
    /// ```swift
    /// PushWorkerCommandLine.prepareProcess()
    /// exit(await PushWorkerCommandLine(registerWorkers: { registry, _ in ... }).main())
    /// ```
    /// - Holds standard descriptors that were closed at launch with `/dev/null`
    ///   (``StandardStream/reserveClosedDescriptors()``), before the first `await` starts the concurrency
    ///   runtime's threads, which open descriptors of their own that would otherwise take those numbers
    ///   (log lines would then be written into them).
    /// - Installs pushworker's signal handling (``ProcessSignals``): from then on a SIGTERM or SIGINT stops
    ///   `run`, `dev`, `results` and `redrive` gracefully however early it arrives, a second one exits with
    ///   130, and a broken stdout or stderr pipe never ends the process by SIGPIPE.
    /// - Raises the soft limit on open descriptors (`RLIMIT_NOFILE`) to the hard limit: each running exec
    ///   program holds three or four.
    ///
    /// Later calls do nothing.
    public static func prepareProcess() {
        guard !prepared.exchange(true, ordering: .acquiringAndReleasing) else { return }
        StandardStream.reserveClosedDescriptors()
        DescriptorLimit.raiseSoftLimit()
        ProcessSignals.install()
    }

    private static let prepared = Atomic<Bool>(false)

    /// The commands that stop gracefully on SIGTERM or SIGINT; the others end by the signal's default action.
    static let gracefulCommands: Set<String> = ["run", "dev", "results", "redrive"]

    /// Runs the command named by `arguments[1]` and returns the process exit status.
    ///
    /// It calls ``prepareProcess()`` first (which does nothing when the executable's `main.swift` already
    /// did, as it should).
    public func main(_ arguments: [String] = CommandLine.arguments) async -> Int32 {
        Self.prepareProcess()
        let rest = Array(arguments.dropFirst())
        guard var command = rest.first else {
            Output.error(Self.usage)
            return 2
        }
        var options = Array(rest.dropFirst())
        // `pushworker help produce` is `pushworker produce --help`.
        if command == "help", let named = options.first {
            guard Self.commands.contains(named) else {
                Output.error("pushworker help: unknown command '\(named)'\(Self.commandHint(named)); run 'pushworker --help' for the list")
                return 2
            }
            // `help help` and `help version` are the overview.
            command = named == "help" || named == "version" ? "help" : named
            options = ["--help"]
        }
        if !Self.gracefulCommands.contains(command) || options.contains("--help") || options.contains("-h") {
            ProcessSignals.useDefaultAction()
        }
        do {
            switch command {
            case "run": try await RunCommand(commandLine: self).execute(options)
            case "dev": try await DevCommand(commandLine: self).execute(options)
            case "produce": try await ProduceCommand().execute(options)
            case "results": try await ResultsCommand().execute(options)
            case "redrive": try await RedriveCommand().execute(options)
            case "check-config": try CheckConfigCommand(commandLine: self).execute(options)
            case "bench": try await BenchCommand(commandLine: self).execute(options)
            case "--help", "-h", "help":
                Output.line(Self.usage)
            case "--version", "version":
                Output.line("pushworker \(Self.version) (librdkafka \(KafkaLibrary.versionString); \(MemoryAllocator.description))")
            default:
                Output.error("pushworker: unknown command '\(command)'\(Self.commandHint(command)); run 'pushworker --help' for the list")
                return 2
            }
            return 0
        } catch let error as CommandLineError {
            Output.error(error.message)
            return error.code.exitStatus
        } catch let error as ConfigurationError {
            Output.error("pushworker \(command): invalid configuration: \(error.description)")
            return 1
        } catch {
            Output.error("pushworker \(command): \(error)")
            return 1
        }
    }

    /// " (did you mean 'results'?)" for a command name close to a known one, else "".
    static func commandHint(_ typed: String) -> String {
        Suggestion.closest(to: typed, among: commands).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// pushworker's version (``PushWorkerService/version``, which `/metrics` reports too).
    public static let version = PushWorkerService.version

    /// Loads the configuration for `run`/`check-config`: `--config`, else `$PUSHWORKER_CONFIG`, else the
    /// built-in defaults, then the environment, then `--bootstrap-servers`.
    /// - Returns: the configuration and where it came from (a file path, or "built-in defaults").
    static func loadConfiguration(path: String?, bootstrapServers: String?, fallbackPath: String? = nil) throws -> (ServiceConfiguration, source: String) {
        let environment = ProcessInfo.processInfo.environment
        let file = path ?? environment["PUSHWORKER_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? fallbackPath
        var configuration = try ServiceConfiguration.load(path: file, environment: environment)
        if let bootstrapServers {
            configuration.kafka["bootstrap.servers"] = bootstrapServers
            try configuration.check()
        }
        return (configuration, file ?? "built-in defaults")
    }

    /// Why `registry` cannot serve (it routes no type and has no default worker, so every push would get
    /// `noData` / `noWorker`), naming the configuration keys to set and where the configuration came from;
    /// `nil` when it has a worker. `run` and `check-config` refuse such a configuration; `dev` warns.
    static func noWorkersProblem(_ registry: WorkerRegistry, source: String) -> String? {
        guard registry.types.isEmpty, registry.defaultWorker == nil else { return nil }
        return "no workers in the configuration (\(source)), so every push would get noData/noWorker; "
            + "declare workers by payload type under 'workers' (e.g. workers: { ping: { kind: \"noop\", result: \"newData\" } }) "
            + "or a 'defaultWorker', in the file given by --config or $PUSHWORKER_CONFIG (see config/pushworker.json5)"
    }

    /// The configured workers plus the Swift ones, checked against the configuration's `permittedTypes`
    /// and `workerSettings` (every section read by a worker).
    /// - Throws: ``ConfigurationError`` when a route is not permitted, a permitted type has no worker, a
    ///   worker's settings do not decode or a settings section is read by no worker; whatever
    ///   `registerWorkers` throws.
    func makeRegistry(_ configuration: ServiceConfiguration) throws -> WorkerRegistry {
        var registry = configuration.makeRegistry()
        do {
            try registerWorkers(&registry, configuration)
        } catch let error as WorkerSettingsError {
            throw ConfigurationError(error)
        }
        try configuration.checkRoutes(registry)
        return registry
    }
}
