import PushWorkerCore
import PushWorker
import PushWorkerKafka

/// The consumer settings the service gets on the embedded cluster (librdkafka 2.0.2's mock broker), the
/// same in `pushworker dev`, `pushworker bench`, and `pushworker run` when its brokers turn out to be an
/// embedded cluster (``isEmbeddedCluster(clusterId:)``, e.g. `pushworker dev --broker-only`): only what the
/// mock itself needs, never a tuning.
///
/// - `fetch.wait.max.ms=10`: the mock broker answers a Fetch that finds no new record only after
///   `fetch.wait.max.ms` (librdkafka's default 500 ms), even when records arrive meanwhile, so a caught-up
///   consumer would see each new record up to half a second late. A real broker answers as soon as
///   `fetch.min.bytes` (1) have arrived, so this is not needed there.
/// - `session.timeout.ms=6000`: the mock's consumer group waits `session.timeout.ms` − 1 s (taken from the
///   members' JoinGroup) before every rebalance after the first, also after the last member has left,
///   where a real broker waits `group.initial.rebalance.delay.ms` (3 s); and a member that stopped before
///   its first assignment (no member id yet, so no LeaveGroup) stays in the group for its session timeout
///   and, elected leader, holds the group's SyncGroup that long again (rdkafka_mock_cgrp.c 2.0.2:
///   `rd_kafka_mock_cgrp_rebalance`, `rd_kafka_mock_cgrp_elect_leader`). With librdkafka's 45 000 a
///   restarted `pushworker run` waited 44 s for its partitions, 130 s after a stop before the first
///   assignment; with 6000, 5 s and about 16 s.
/// - `max.poll.interval.ms`: 30 000, or the rebalance drain timeout plus 10 s, or the configured
///   `session.timeout.ms` (librdkafka refuses a smaller one), whichever is longest. librdkafka waits
///   for a JoinGroup answer `max.poll.interval.ms` + 3 s (rdkafka_request.c, `rd_kafka_JoinGroupRequest`),
///   so a JoinGroup the mock never answers was retried after 303 s with the default 300 000; now after 33 s.
///   The mock drops a waiting member's answer when that member's session expires during the wait, which
///   happens when the wait, computed from an earlier member's longer `session.timeout.ms`, outlasts it
///   (seen: a 60 s member left, a 45 s member joined and was removed at 45 s of a 59 s wait).
///
/// A value set in the configuration (`kafka` or `consumer`) is kept.
enum EmbeddedClusterSettings {
    /// The consumer properties for `configuration`, by name.
    static func consumer(for configuration: ServiceConfiguration) -> [String: String] {
        let drainMs = configuration.effectiveRebalanceDrainTimeout.wholeMilliseconds
        let sessionMs = configuration.consumerProperties["session.timeout.ms"].flatMap { Int64($0) } ?? 6000
        let pollIntervalMs = max(30_000, min(drainMs + 10_000, Int64(Int32.max)), sessionMs)
        return ["fetch.wait.max.ms": "10", "session.timeout.ms": "6000", "max.poll.interval.ms": String(pollIntervalMs)]
    }

    /// The prefix of the cluster id librdkafka's mock cluster reports (`mockCluster<hex>`, rdkafka_mock.c).
    static let clusterIdPrefix = "mockCluster"

    /// Whether brokers reporting `clusterId` are an embedded cluster (librdkafka's mock).
    static func isEmbeddedCluster(clusterId: String?) -> Bool {
        clusterId?.hasPrefix(clusterIdPrefix) == true
    }

    /// The cluster id the configuration's brokers report (``KafkaProducer/clusterId(timeoutMs:)``, with the
    /// configuration's common `kafka` properties, on a dedicated thread), or `nil` when none answered
    /// within `timeoutMs`.
    static func clusterId(of configuration: ServiceConfiguration, timeoutMs: Int32 = 1500) async -> String? {
        guard let producer = try? KafkaProducer(configuration: configuration.kafka, logHandler: { _ in }) else { return nil }
        let id = try? await DedicatedThread.run(name: "pushworker-cluster-id") { producer.clusterId(timeoutMs: timeoutMs) }
        _ = await producer.close(timeoutMs: 0)
        return id ?? nil
    }

    /// Sets ``consumer(for:)`` in `configuration.consumer` where the configuration's consumer properties do
    /// not set it already.
    /// - Returns: the properties set, by name.
    @discardableResult
    static func apply(to configuration: inout ServiceConfiguration) -> [String: String] {
        let properties = configuration.consumerProperties
        var applied: [String: String] = [:]
        for (name, value) in consumer(for: configuration) where properties[name] == nil {
            configuration.consumer[name] = value
            applied[name] = value
        }
        return applied
    }

    /// `properties` with ``consumer`` set where it does not set it already (for the bench's bare pipe).
    static func applied(to properties: KafkaConfiguration) -> KafkaConfiguration {
        var properties = properties
        for (name, value) in consumer(for: ServiceConfiguration()) { properties.setDefault(name, value) }
        return properties
    }
}
