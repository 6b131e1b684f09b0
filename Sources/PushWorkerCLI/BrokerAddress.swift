import Foundation
import PushWorkerKafka

/// The brokers `produce`, `results` and `redrive` talk to, where that address came from, and the check that
/// a broker answers there before the command starts (``KafkaBrokerProbe``).
struct BrokerAddress: Equatable {
    /// `bootstrap.servers`: `host:port[,host:port...]`.
    var servers: String
    /// Where it came from, for messages: `--bootstrap-servers`, `$PUSHWORKER_BOOTSTRAP_SERVERS`, the
    /// configuration, or the file a running `pushworker dev` wrote (``DevBootstrapFile``).
    var origin: String

    /// `--bootstrap-servers` (or `-b`, `--bootstrap-server`), else `$PUSHWORKER_BOOTSTRAP_SERVERS`, else
    /// `configured` (redrive: a configuration file's brokers), else the address a running `pushworker dev`
    /// left in its bootstrap file.
    /// - Throws: ``CommandLineError`` (usage) when none of them gives an address.
    static func resolve(flag: String?, command: String, configured: String? = nil,
                        environment: [String: String] = ProcessInfo.processInfo.environment) throws -> BrokerAddress {
        if let flag, !flag.isEmpty { return BrokerAddress(servers: flag, origin: "--bootstrap-servers") }
        if let servers = environment["PUSHWORKER_BOOTSTRAP_SERVERS"], !servers.isEmpty {
            return BrokerAddress(servers: servers, origin: "$PUSHWORKER_BOOTSTRAP_SERVERS")
        }
        if let configured { return BrokerAddress(servers: configured, origin: "the configuration") }
        if let dev = DevBootstrapFile.read(environment: environment) {
            return BrokerAddress(servers: dev.servers, origin: "the address pushworker dev (pid \(dev.pid)) left in \(dev.path)")
        }
        throw CommandLineError(.usage, "pushworker \(command): --bootstrap-servers HOSTS is required (or set PUSHWORKER_BOOTSTRAP_SERVERS, or keep 'pushworker dev' running: it leaves its address in \(DevBootstrapFile.path(environment: environment) ?? "its bootstrap file, but \(DevBootstrapFile.environmentVariable) is empty")); 'pushworker dev' prints it on its first line")
    }

    /// Whether every host of `servers` is the loopback interface (`127.x.x.x`, `localhost`, `::1`), where
    /// `pushworker dev` listens.
    static func isLoopback(_ servers: String) -> Bool {
        let hosts = servers.split(separator: ",").map { entry -> Substring in
            var host = entry.trimmingCharacters(in: .whitespaces)[...]
            if let scheme = host.range(of: "://") { host = host[scheme.upperBound...] }
            if host.hasPrefix("[") { return host.dropFirst().prefix { $0 != "]" } }
            if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon { return host[..<colon] }
            return host
        }
        return !hosts.isEmpty && hosts.allSatisfy { $0.hasPrefix("127.") || $0 == "localhost" || $0 == "::1" }
    }

    /// The one-line error for a probe that found no broker: for a loopback address, the hint that dev's port
    /// changes each start; librdkafka's reason in parentheses.
    func noBrokerMessage(command: String, reason: String) -> String {
        let hint = Self.isLoopback(servers)
            ? " — is `pushworker dev` running? its port changes each start; without --bootstrap-servers, produce, results and redrive find a running dev's address themselves"
            : "; check the address and that the brokers run"
        let from = origin == "--bootstrap-servers" ? "" : " (from \(origin))"
        return "pushworker \(command): no broker at \(servers)\(from)\(hint) (librdkafka: \(reason))"
    }

    /// Checks that a broker answers (``KafkaBrokerProbe/check(_:timeout:)``, on a dedicated thread), with
    /// `properties` (security settings) and ``servers``.
    /// - Throws: ``CommandLineError`` (failure) with ``noBrokerMessage(command:reason:)``.
    func check(command: String, properties: KafkaConfiguration = KafkaConfiguration(), timeout: Duration = .seconds(10)) async throws {
        var properties = properties
        properties["bootstrap.servers"] = servers
        let configuration = properties
        do {
            try await DedicatedThread.run(name: "pushworker-broker-probe") { try KafkaBrokerProbe.check(configuration, timeout: timeout) }
        } catch let error as KafkaError where error.code == .noBroker {
            throw CommandLineError(.failure, noBrokerMessage(command: command, reason: error.message))
        }
    }
}
