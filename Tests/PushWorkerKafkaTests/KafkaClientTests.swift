import Foundation
import PushWorkerKafka
import Synchronization
import Testing

/// The librdkafka wrapper against the embedded (mock) cluster.
@Suite(.timeLimit(.minutes(1)))
struct KafkaClientTests {
    static func uniqueName(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Stops the cluster on a dedicated thread: its destroy joins the brokers' threads, which must not hold
    /// up the cooperative pool the other suites' jobs run on.
    static func shutdown(_ cluster: EmbeddedKafkaCluster) async throws {
        try await DedicatedThread.run(name: "cluster-shutdown") { cluster.shutdown() }
    }

    /// Polls on a dedicated thread until `count` records arrive or `timeoutMs` passes.
    static func consume(_ consumer: KafkaConsumer, count: Int, timeoutMs: Int = 15_000) async throws -> [KafkaRecord] {
        try await DedicatedThread.run(name: "test-consume") {
            var records: [KafkaRecord] = []
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
            while records.count < count && ContinuousClock.now < deadline {
                if let record = try consumer.poll(timeoutMs: 50) { records.append(record) }
            }
            return records
        }
    }

    @Test func recordsRoundTripWithKeysHeadersAndNullValues() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("roundtrip")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        let first = try await producer.send(KafkaOutgoingRecord(
            topic: topic, key: Array("device-1".utf8), value: Array(#"{"a":1}"#.utf8),
            headers: [KafkaHeader(name: "apns-id", string: "id-1"), KafkaHeader(name: "empty", value: nil)]))
        #expect(first.error == nil)
        #expect(first.offset == 0)
        let tombstone = try await producer.send(KafkaOutgoingRecord(topic: topic, value: nil))
        #expect(tombstone.offset == 1)
        await producer.close()

        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = Self.uniqueName("reader")
        let consumer = try KafkaConsumer(configuration: properties)
        try consumer.assign([TopicPartitionOffset(TopicPartition(topic: topic, partition: 0), offset: KafkaConsumer.offsetBeginning)])
        let records = try await Self.consume(consumer, count: 2)
        try await DedicatedThread.run(name: "close") { try consumer.close() }
        #expect(records.count == 2)
        #expect(records[0].key == Array("device-1".utf8))
        #expect(records[0].value == Array(#"{"a":1}"#.utf8))
        #expect(records[0].headers == [KafkaHeader(name: "apns-id", string: "id-1"), KafkaHeader(name: "empty", value: nil)])
        #expect(records[0].topicPartition == TopicPartition(topic: topic, partition: 0))
        #expect(records[1].value == nil)
        #expect(records[1].key == nil)
        #expect(records[1].offset == 1)
        try await Self.shutdown(cluster)
    }

    @Test func deliveryReportsCarryTheCallersTokensInBatches() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("tokens")
        try cluster.createTopic(topic, partitions: 2)
        let seen = Mutex<[UInt64]>([])
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]), onDelivery: { reports in
            #expect(reports.allSatisfy { $0.error == nil && $0.offset >= 0 })
            seen.withLock { $0.append(contentsOf: reports.map(\.token)) }
        })
        for token in UInt64(0)..<500 {
            try producer.produce(KafkaOutgoingRecord(topic: topic, partition: Int32(token % 2), value: [1, 2, 3]), token: token)
        }
        #expect(await producer.flush(timeoutMs: 10_000) == 0)
        let left = await producer.close()
        #expect(left == 0)
        #expect(Set(seen.withLock { $0 }) == Set(0..<500))
        try await Self.shutdown(cluster)
    }

    @Test func onlyStoredOffsetsAreCommitted() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("commits")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        for _ in 0..<5 { _ = try await producer.send(KafkaOutgoingRecord(topic: topic, value: [0x7B, 0x7D])) }
        await producer.close()

        let group = Self.uniqueName("group")
        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = group
        properties["enable.auto.offset.store"] = "false"
        properties["auto.offset.reset"] = "earliest"
        let assigned = Mutex<[KafkaRebalanceEvent]>([])
        let consumer = try KafkaConsumer(configuration: properties, onRebalance: { event in assigned.withLock { $0.append(event) } })
        try consumer.subscribe([topic])
        let records = try await Self.consume(consumer, count: 5, timeoutMs: 20_000)
        #expect(records.count == 5)
        let tp = TopicPartition(topic: topic, partition: 0)
        #expect(assigned.withLock { $0 }.contains(.assigned([tp])))
        // Store "done up to offset 2" (next offset 3), commit, and read it back.
        let refused = consumer.storeOffsets([TopicPartitionOffset(tp, offset: 3)])
        #expect(refused.isEmpty)
        let committed = try await DedicatedThread.run(name: "commit") { () throws -> [TopicPartitionOffset] in
            try consumer.commit()
            return try consumer.committed([tp], timeoutMs: 5000)
        }
        #expect(committed == [TopicPartitionOffset(tp, offset: 3)])
        // A partition that is not assigned is refused, not stored.
        let other = consumer.storeOffsets([TopicPartitionOffset(TopicPartition(topic: topic, partition: 7), offset: 1)])
        #expect(other.count == 1)
        try await DedicatedThread.run(name: "close") { try consumer.close() }
        #expect(assigned.withLock { $0 }.contains(.revoking([tp])))
        try await Self.shutdown(cluster)
    }

    /// A partition set back behind librdkafka's back (here by another client of the group; in the field by a
    /// retried older commit that reached the coordinator after a newer one) stays set back under a commit of
    /// the stored offsets, which librdkafka skips as committed already; an explicit commit puts it right.
    @Test func anExplicitCommitSendsOffsetsLibrdkafkaBelievesCommitted() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("explicit")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        for _ in 0..<6 { _ = try await producer.send(KafkaOutgoingRecord(topic: topic, value: [0x7B, 0x7D])) }
        await producer.close()
        let group = Self.uniqueName("group")
        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = group
        properties["enable.auto.offset.store"] = "false"
        properties["enable.auto.commit"] = "false"
        let tp = TopicPartition(topic: topic, partition: 0)
        let consumer = try KafkaConsumer(configuration: properties)
        let other = try KafkaConsumer(configuration: properties)
        try consumer.assign([TopicPartitionOffset(tp, offset: KafkaConsumer.offsetBeginning)])
        #expect(try await Self.consume(consumer, count: 6).count == 6)
        let (stored, explicit) = try await DedicatedThread.run(name: "commits") { () throws -> (Int64?, Int64?) in
            #expect(consumer.storeOffsets([TopicPartitionOffset(tp, offset: 5)]).isEmpty)
            try consumer.commit()
            // Set back to 2 by the other client: the first one still believes 5 committed.
            try other.commit([TopicPartitionOffset(tp, offset: 2)])
            try consumer.commit()
            let afterStored = try consumer.committed([tp], timeoutMs: 5000).first?.offset
            try consumer.commit([TopicPartitionOffset(tp, offset: 5)])
            return (afterStored, try consumer.committed([tp], timeoutMs: 5000).first?.offset)
        }
        // librdkafka 2.0.2 skips the stored offset it believes committed (the hazard); newer versions may not.
        #expect(stored == 2 || stored == 5, "\(stored.map(String.init) ?? "none")")
        #expect(explicit == 5, "the explicit commit is sent and sets the partition right")
        try await DedicatedThread.run(name: "close") {
            try consumer.close()
            try other.close()
        }
        try await Self.shutdown(cluster)
    }

    @Test func invalidPropertiesAreRefusedByName() throws {
        let configuration = KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "no.such.property": "x"])
        #expect(throws: KafkaError.self) { try configuration.validate() }
        do {
            try configuration.validate()
        } catch let error as KafkaError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("no.such.property"))
        }
        #expect(throws: Never.self) { try KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "linger.ms": "5"]).validate() }
    }

    @Test func clientsThatLibrdkafkaCannotCreateAreRefusedWithItsMessage() throws {
        // rd_kafka_new loads the CA file: one that is no certificate makes it fail.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kafka-ca-\(UUID().uuidString.prefix(6)).pem")
        try "-----BEGIN CERTIFICATE-----\nnot a certificate\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let configuration = KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL", "ssl.ca.location": file.path])
        #expect(throws: Never.self) { try configuration.validate() }
        do {
            _ = try KafkaProducer(configuration: configuration)
            Issue.record("the producer was created")
        } catch let error as KafkaError {
            #expect(error.code == .clientCreation)
            #expect(error.message.hasPrefix("rd_kafka_new failed: "), "\(error.message)")
            #expect(error.message.contains("ssl.ca.location"), "\(error.message)")
        }
        do {
            try configuration.validateByCreatingClient(consumer: true)
            Issue.record("the consumer was created")
        } catch let error as KafkaError {
            #expect(error.code == .clientCreation)
            #expect(!error.message.hasPrefix("rd_kafka_new failed"), "librdkafka's message, bare: \(error.message)")
            #expect(error.message.contains("ssl.ca.location"), "\(error.message)")
        }
    }

    @Test func aReaderReadsEveryPartitionWithoutAGroupId() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("reader")
        try cluster.createTopic(topic, partitions: 3)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        for partition in Int32(0)..<3 {
            let report = try await producer.send(KafkaOutgoingRecord(topic: topic, partition: partition, value: Array("p\(partition)".utf8)))
            #expect(report.error == nil)
        }
        await producer.close()

        let consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        let partitions = try await DedicatedThread.run(name: "partitions") { try consumer.partitions(of: topic, timeoutMs: 5000) }
        #expect(partitions == (0..<3).map { TopicPartition(topic: topic, partition: $0) })
        try consumer.assign(partitions.map { TopicPartitionOffset($0, offset: KafkaConsumer.offsetBeginning) })
        let records = try await Self.consume(consumer, count: 3)
        try await DedicatedThread.run(name: "close") { try consumer.close() }
        #expect(records.map(\.topicPartition.partition).sorted() == [0, 1, 2])
        #expect(records.allSatisfy { $0.value == Array("p\($0.topicPartition.partition)".utf8) })
        try await Self.shutdown(cluster)
    }

    @Test func embeddedClusterReportsTopicsAndStopsOnShutdown() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 3)
        #expect(cluster.bootstrapServers.split(separator: ",").count == 3)
        let topic = Self.uniqueName("meta")
        try cluster.createTopic(topic, partitions: 6, replicationFactor: 3)
        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = Self.uniqueName("meta")
        let consumer = try KafkaConsumer(configuration: properties)
        let partitions = try await DedicatedThread.run(name: "meta") { try consumer.partitionCount(topic: topic, timeoutMs: 5000) }
        #expect(partitions == 6)
        try await DedicatedThread.run(name: "close") { try consumer.close() }
        try await Self.shutdown(cluster)
        #expect(throws: KafkaError.self) { try cluster.createTopic("after-shutdown") }
        #expect(throws: KafkaError.self) { try EmbeddedKafkaCluster(brokers: 0) }
    }

    @Test func statisticsReportBrokersTheGroupAndConsumerLag() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = Self.uniqueName("stats")
        try cluster.createTopic(topic, partitions: 2)
        let producerStatistics = Mutex<[KafkaStatistics]>([])
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "statistics.interval.ms": "100"]),
            onStatistics: { statistics in producerStatistics.withLock { $0.append(statistics) } })
        for _ in 0..<4 { _ = try await producer.send(KafkaOutgoingRecord(topic: topic, partition: 0, value: [0x7B, 0x7D])) }

        var properties = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        properties["group.id"] = Self.uniqueName("group")
        properties["enable.auto.offset.store"] = "false"
        properties["auto.offset.reset"] = "earliest"
        properties["statistics.interval.ms"] = "100"
        let consumerStatistics = Mutex<KafkaStatistics?>(nil)
        let consumer = try KafkaConsumer(configuration: properties, onStatistics: { statistics in consumerStatistics.withLock { $0 = statistics } })
        try consumer.subscribe([topic])
        let records = try await Self.consume(consumer, count: 4, timeoutMs: 20_000)
        #expect(records.count == 4)
        let tp = TopicPartition(topic: topic, partition: 0)
        #expect(consumer.storeOffsets([TopicPartitionOffset(tp, offset: 2)]).isEmpty)
        // Statistics are served by the consumer's poll: keep polling until the lag of partition 0 shows the
        // two records whose offsets are not stored.
        let lag = try await DedicatedThread.run(name: "stats") { () throws -> KafkaStatistics? in
            let deadline = ContinuousClock.now.advanced(by: .seconds(15))
            while ContinuousClock.now < deadline {
                _ = try consumer.poll(timeoutMs: 50)
                if let statistics = consumerStatistics.withLock({ $0 }),
                   statistics.partitions.first(where: { $0.topic == topic && $0.partition == 0 })?.consumerLag == 2 {
                    return statistics
                }
            }
            return consumerStatistics.withLock { $0 }
        }
        let statistics = try #require(lag)
        #expect(statistics.clientType == "consumer")
        #expect(statistics.brokersUp == 1, "the GroupCoordinator (logical) entry is not counted")
        #expect(statistics.consumerGroup?.state == "up")
        #expect(statistics.consumerGroup?.assignmentSize == 2)
        #expect(statistics.partitions.first { $0.topic == topic && $0.partition == 0 }?.highWatermark == 4)
        #expect(statistics.time > 1_600_000_000)
        try await DedicatedThread.run(name: "close") { try consumer.close() }

        let fromProducer = try #require(producerStatistics.withLock { $0.last })
        #expect(fromProducer.clientType == "producer")
        #expect(fromProducer.brokersUp == 1)
        #expect(fromProducer.consumerGroup == nil)
        #expect(fromProducer.messagesQueued == 0)
        await producer.close()
        try await Self.shutdown(cluster)
    }

    @Test func statisticsThatAreNotAnObjectAreRefused() {
        #expect(KafkaStatistics.parse("[1]") == nil)
        #expect(KafkaStatistics.parse("not json") == nil)
        let minimal = KafkaStatistics.parse(#"{"name":"c","type":"consumer","brokers":{"b/1":{"nodeid":1,"state":"UP","req_timeouts":3}},"topics":{"t":{"partitions":{"-1":{"partition":-1},"0":{"partition":0,"consumer_lag":7}}}}}"#)
        #expect(minimal?.brokers == [KafkaStatistics.Broker(name: "b/1", nodeId: 1, source: "", state: "UP", requestTimeouts: 3)])
        #expect(minimal?.partitions == [KafkaStatistics.Partition(topic: "t", partition: 0, consumerLag: 7, highWatermark: -1)])
    }
}

/// The broker probe the command-line tools run before they start.
@Suite(.timeLimit(.minutes(1)))
struct KafkaBrokerProbeTests {
    @Test func aRefusedAddressFailsAtOnceWithLibrdkafkasReason() async throws {
        // A port nothing listens on: bound, then closed.
        let start = ContinuousClock.now
        await #expect {
            try await DedicatedThread.run(name: "probe") { try KafkaBrokerProbe.check(KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1"])) }
        } throws: { error in
            guard let error = error as? KafkaError else { return false }
            // ALL_BROKERS_DOWN ended it, not the 10 s limit (that one carries the metadata request's error).
            return error.code == .noBroker && error.message.contains("Connection refused")
                && error.rdKafkaErrorName == "_ALL_BROKERS_DOWN"
        }
        // Below the probe's 10 s limit (the error checked above already names ALL_BROKERS_DOWN): a loaded
        // machine's first seconds of the parallel run took it to 9.003 s.
        #expect(start.duration(to: .now) < .seconds(10), "ALL_BROKERS_DOWN ends the probe, not its 10 s limit")
    }

    @Test func aRunningClusterAnswers() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let servers = cluster.bootstrapServers
        try await DedicatedThread.run(name: "probe") { try KafkaBrokerProbe.check(KafkaConfiguration(["bootstrap.servers": servers])) }
        try await KafkaClientTests.shutdown(cluster)
    }

    @Test func topicNamesListTheClustersTopics() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let topic = KafkaClientTests.uniqueName("names")
        try cluster.createTopic(topic)
        let consumer = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        let names = try await DedicatedThread.run(name: "names") { try consumer.topicNames(timeoutMs: 5_000) }
        #expect(names.contains(topic))
        #expect(names == names.sorted())
        #expect(!names.contains(topic + "-never-created"))
        try? await DedicatedThread.run(name: "close") { try consumer.close() }
        try await KafkaClientTests.shutdown(cluster)
    }
}
