import PushWorker
import PushWorkerKafka
@testable import PushWorkerCLI
import Testing

/// The consumer settings `dev`, `bench`, and `run` against an embedded cluster give the service: only
/// where the configuration sets none, and always ones librdkafka accepts together.
@Suite struct EmbeddedClusterSettingsTests {
    @Test func theSettingsFillOnlyWhatTheConfigurationLeavesOpen() throws {
        var plain = ServiceConfiguration()
        #expect(EmbeddedClusterSettings.apply(to: &plain) == ["fetch.wait.max.ms": "10", "session.timeout.ms": "6000", "max.poll.interval.ms": "30000"])
        try plain.consumerProperties.validateByCreatingClient(consumer: true)

        // A configuration written for a real cluster (deploy/config: 60 s sessions) keeps its session
        // timeout, and max.poll.interval.ms is never below it (librdkafka refuses that: rd_kafka_new fails).
        var long = ServiceConfiguration()
        long.consumer["session.timeout.ms"] = "60000"
        let applied = EmbeddedClusterSettings.apply(to: &long)
        #expect(applied["session.timeout.ms"] == nil && applied["max.poll.interval.ms"] == "60000")
        try long.consumerProperties.validateByCreatingClient(consumer: true)

        // A long rebalance drain keeps its callback within max.poll.interval.ms.
        var draining = ServiceConfiguration()
        draining.rebalanceDrainTimeout = .seconds(40)
        #expect(EmbeddedClusterSettings.apply(to: &draining)["max.poll.interval.ms"] == "50000")

        #expect(EmbeddedClusterSettings.isEmbeddedCluster(clusterId: "mockCluster15778a9668a"))
        #expect(!EmbeddedClusterSettings.isEmbeddedCluster(clusterId: "MkU3OEVBNTcwNTJENDM2Qk") && !EmbeddedClusterSettings.isEmbeddedCluster(clusterId: nil))
    }

    @Test func theClusterIdOfAnEmbeddedClusterIsRecognised() async throws {
        let cluster = try EmbeddedKafkaCluster()
        defer { cluster.shutdown() }
        var configuration = ServiceConfiguration()
        configuration.kafka["bootstrap.servers"] = cluster.bootstrapServers
        let id = await EmbeddedClusterSettings.clusterId(of: configuration, timeoutMs: 5000)
        #expect(EmbeddedClusterSettings.isEmbeddedCluster(clusterId: id), "\(id ?? "nil")")
    }
}
