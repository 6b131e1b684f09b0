import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker

/// `pushworker dev [--config FILE] [--broker-only] [--samples] [--brokers N]`.
struct DevCommand {
    let commandLine: PushWorkerCommandLine

    static let help = """
    Usage: pushworker dev [--config FILE] [--broker-only] [--samples] [--brokers N]

    Starts an embedded Kafka cluster (librdkafka's mock cluster, on loopback), creates the input and results
    topics (and the status page's topic), and runs the service on it. The first stdout line is 'bootstrap.servers=HOST:PORT[,...]'; then
    each result is printed as one JSON line once the cluster has acknowledged it. SIGTERM/SIGINT stops.
    The service's consumer gets fetch.wait.max.ms=10 unless the configuration sets it: the embedded broker
    answers a fetch that finds no new record only after fetch.wait.max.ms (a real broker answers as soon
    as a record arrives), so librdkafka's 500 ms would delay each result by up to half a second. It also
    gets session.timeout.ms=6000 and max.poll.interval.ms=30000 unless set: the embedded broker waits
    session.timeout.ms - 1 s before each rebalance after the first, and a JoinGroup it drops is sent again
    only after max.poll.interval.ms + 3 s. pushworker run gets the same against dev --broker-only.
    The cluster's port changes each start (librdkafka 2.0.2's mock cluster has no fixed port): while dev runs,
    its address is also in $XDG_RUNTIME_DIR/pushworker/dev-bootstrap (else ~/.pushworker/dev-bootstrap;
    $PUSHWORKER_DEV_BOOTSTRAP_FILE names another file, empty: none), which produce, results and redrive read
    when no --bootstrap-servers is given. A configuration without workers starts with a warning.

    Options:
      --config FILE     JSON5 configuration (default: $PUSHWORKER_CONFIG, else config/pushworker.json5 if it
                        exists, else built-in defaults); its bootstrap servers are replaced by the cluster's
      --broker-only     only the embedded cluster (with the topics), until SIGTERM/SIGINT
      --samples         also send sample pushes, one for each outcome of the example configuration
      --brokers N       brokers in the embedded cluster (default 1)
    """

    /// The file `dev` reads when neither `--config` nor `$PUSHWORKER_CONFIG` names one:
    /// `config/pushworker.json5` in the working directory, if it exists.
    static var defaultConfigPath: String? {
        FileManager.default.fileExists(atPath: "config/pushworker.json5") ? "config/pushworker.json5" : nil
    }

    func execute(_ arguments: [String]) async throws {
        var parser = ArgumentParser(command: "dev", options: [
            .init(name: "config", takesValue: true), .init(name: "broker-only", takesValue: false),
            .init(name: "samples", takesValue: false), .init(name: "brokers", takesValue: true),
        ])
        try parser.parse(arguments)
        if parser.has("help") { Output.line(Self.help); return }
        let brokers = try parser.int("brokers", in: 1...9) ?? 1
        var (configuration, source) = try PushWorkerCommandLine.loadConfiguration(path: parser.value("config"), bootstrapServers: nil, fallbackPath: Self.defaultConfigPath)
        PushWorkerLogger.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
        let logger = PushWorkerLogger(label: "pushworker.dev")
        logger.info("configuration loaded", metadata: ["source": source])
        // Routes and Swift workers' own settings are checked before anything starts or is printed.
        let registry = parser.has("broker-only") ? nil : try commandLine.makeRegistry(configuration)
        if let registry, let problem = PushWorkerCommandLine.noWorkersProblem(registry, source: source) {
            logger.warning("\(problem)")
        }
        let cluster = try EmbeddedKafkaCluster(brokers: brokers, logHandler: PushWorkerLogger(label: "pushworker.embedded-cluster").kafkaLogHandler)
        defer { cluster.shutdown() }
        let replication = min(brokers, 3)
        let topics = configuration.inputTopics + configuration.outputTopics + (configuration.statusPage.enabled ? [configuration.statusPage.topic] : [])
        for topic in topics {
            try cluster.createTopic(topic, partitions: configuration.devPartitions, replicationFactor: replication)
        }
        // The address for produce/results/redrive in another terminal (the mock cluster's port changes each
        // start); removed again when this dev stops.
        var bootstrapFile: String?
        do {
            if let other = DevBootstrapFile.read() {
                // Another dev still runs: its address stays where the other commands look for it.
                logger.warning("another pushworker dev is running and its address stays in the bootstrap file; pass this cluster's address to the other commands with --bootstrap-servers", metadata: [
                    "file": other.path, "otherPid": String(other.pid), "otherBootstrapServers": other.servers,
                    "bootstrap.servers": cluster.bootstrapServers,
                ])
            } else {
                bootstrapFile = try DevBootstrapFile.write(servers: cluster.bootstrapServers)
            }
        } catch {
            logger.warning("cannot leave the cluster's address for other commands", metadata: ["error": "\(error)"])
        }
        defer { bootstrapFile.map(DevBootstrapFile.remove) }
        // The first stdout line once the file is in place: whoever reads the line finds the file too.
        Output.line("bootstrap.servers=\(cluster.bootstrapServers)")
        if let bootstrapFile { logger.info("cluster address written for produce, results and redrive", metadata: ["file": bootstrapFile]) }
        logger.info("embedded Kafka cluster started", metadata: [
            "bootstrap.servers": cluster.bootstrapServers, "brokers": String(brokers),
            "topics": topics.joined(separator: ","),
            "partitions": String(configuration.devPartitions),
        ])
        if parser.has("broker-only") {
            await SignalWatcher.waitForStop()
            logger.info("stopping the embedded cluster")
            return
        }
        configuration.kafka["bootstrap.servers"] = cluster.bootstrapServers
        EmbeddedClusterSettings.apply(to: &configuration)
        let service = PushWorkerService(configuration: configuration, registry: registry) { record in
            Output.line(bytes: record.value ?? [])
        }
        let watcher = SignalWatcher { service.shutdown() }
        defer { withExtendedLifetime(watcher) {} }
        if parser.has("samples"), let topic = configuration.inputTopics.first {
            let servers = cluster.bootstrapServers
            Task {
                do {
                    let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": servers]), logHandler: logger.kafkaLogHandler)
                    var delivered = 0
                    for record in SamplePayloads.records(topic: topic) {
                        if try await producer.send(record).error == nil { delivered += 1 }
                    }
                    await producer.close()
                    logger.info("sample pushes sent", metadata: ["topic": topic, "delivered": String(delivered)])
                } catch {
                    logger.error("sending sample pushes failed", metadata: ["error": "\(error)"])
                }
            }
        }
        try await service.run()
    }
}
