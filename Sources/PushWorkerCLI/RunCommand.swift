import PushWorkerCore
import PushWorker

/// `pushworker run [--config FILE] [--bootstrap-servers HOSTS]`: the service.
struct RunCommand {
    let commandLine: PushWorkerCommandLine

    static let help = """
    Usage: pushworker run [--config FILE] [--bootstrap-servers HOSTS]

    Runs the service: consumes the input topics in the consumer group, validates and routes each push by
    its "type", runs the worker under its budget, produces the result, and commits the input offset once
    the result is acknowledged. SIGTERM or SIGINT stops it gracefully (exit 0); a second signal exits at once.
    Against an embedded cluster (pushworker dev --broker-only) the consumer gets the settings dev gives its
    own service (fetch.wait.max.ms=10, session.timeout.ms=6000, max.poll.interval.ms=30000) where the
    configuration sets none, so that a restart gets its partitions within seconds.
    While it runs, /metrics (Prometheus), /healthz and /readyz are served on httpServer.host:httpServer.port
    (default 0.0.0.0:9400; PUSHWORKER_HTTP_PORT=0 picks a free port, PUSHWORKER_HTTP_ENABLED=false turns it off).
    It refuses to start (exit 1) when the configuration has no workers and no defaultWorker: every push
    would get noData/noWorker.

    Options:
      --config FILE               JSON5 configuration (default: $PUSHWORKER_CONFIG, else built-in defaults)
      -b, --bootstrap-servers HOSTS   Kafka brokers, host:port[,host:port] (also --bootstrap-server; overrides the file and
                                  $PUSHWORKER_BOOTSTRAP_SERVERS)
    """

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "run", options: [
            .init(name: "config", takesValue: true), .bootstrapServers,
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        var (configuration, source) = try PushWorkerCommandLine.loadConfiguration(path: parser.value("config"), bootstrapServers: parser.value("bootstrap-servers"))
        PushWorkerLogger.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        let logger = PushWorkerLogger(label: "pushworker")
        logger.info("configuration loaded", metadata: ["source": source])
        let registry = try commandLine.makeRegistry(configuration)
        if let problem = PushWorkerCommandLine.noWorkersProblem(registry, source: source) {
            throw CommandLineError(.failure, "pushworker run: \(problem)")
        }
        // Against an embedded cluster (`pushworker dev --broker-only`): the consumer settings its mock broker
        // needs, as `dev` gives its own service (EmbeddedClusterSettings says why; a restart waited 44 s to
        // 303 s for its partitions without them). Real brokers report another cluster id: nothing changes.
        let clusterId = await EmbeddedClusterSettings.clusterId(of: configuration)
        if EmbeddedClusterSettings.isEmbeddedCluster(clusterId: clusterId) {
            let applied = EmbeddedClusterSettings.apply(to: &configuration)
            logger.info("the brokers are an embedded cluster (librdkafka's mock, e.g. pushworker dev --broker-only): consumer settings for its consumer group applied where the configuration sets none",
                        metadata: applied.merging(["clusterId": clusterId ?? ""]) { first, _ in first })
        }
        let service = PushWorkerService(configuration: configuration, registry: registry)
        let watcher = SignalWatcher { service.shutdown() }
        defer { withExtendedLifetime(watcher) {} }
        try await service.run()
    }
}
