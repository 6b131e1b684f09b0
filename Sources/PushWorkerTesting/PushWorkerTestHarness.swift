import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import Synchronization

/// Runs the real pushworker service on an embedded Kafka cluster for tests: produce pushes, await their
/// results, inspect committed offsets.
///
/// Each harness has its own cluster, topics and consumer group, so tests can run in parallel. Its service
/// joins with one group member for all topics (`memberPerTopic = false`, unlike the service's default), so
/// that many harnesses at once stay light; set `$0.memberPerTopic = true` to test a member per topic.
/// ```swift
/// var registry = WorkerRegistry()
/// registry.register(type: "content-update", worker: MyWorker())
/// let harness = try await PushWorkerTestHarness.start(registry: registry)
/// try await harness.produce(#"{"aps":{"content-available":1},"type":"content-update"}"#)
/// let results = try await harness.results(count: 1)
/// #expect(results[0].result == "newData")
/// try await harness.stop()
/// ```
public final class PushWorkerTestHarness: Sendable {
    /// The embedded cluster.
    public let cluster: EmbeddedKafkaCluster
    /// The service's configuration (bootstrap servers point at ``cluster``).
    public let configuration: ServiceConfiguration
    /// The service under test (a new one after ``restart(registry:)``).
    public var service: PushWorkerService { running.withLock { $0.service } }
    private let producer: KafkaProducer
    private let collected: ResultCollector
    private let running: Mutex<(service: PushWorkerService, task: Task<Void, Error>)>

    private init(cluster: EmbeddedKafkaCluster, configuration: ServiceConfiguration, registry: WorkerRegistry, producer: KafkaProducer) {
        self.cluster = cluster
        self.configuration = configuration
        self.producer = producer
        let collected = ResultCollector()
        self.collected = collected
        self.running = Mutex(Self.launch(configuration, registry, collected))
    }

    private static func launch(_ configuration: ServiceConfiguration, _ registry: WorkerRegistry, _ collected: ResultCollector) -> (service: PushWorkerService, task: Task<Void, Error>) {
        let service = PushWorkerService(configuration: configuration, registry: registry) { record in
            collected.add(record)
        }
        return (service, Task { try await service.run() })
    }

    /// Stops the service gracefully and starts a new one in the same consumer group (as a restarted
    /// deployment would); results received from now on are collected afresh.
    /// - Returns: the results the stopped service delivered.
    @discardableResult
    public func restart(registry: WorkerRegistry) async throws -> [ReceivedResult] {
        try await stopService()
        let previous = collected.all
        collected.reset()
        running.withLock { $0 = Self.launch(configuration, registry, collected) }
        return previous
    }

    /// Starts a cluster, creates the topics and runs the service with `registry`.
    /// - Parameters:
    ///   - registry: the workers under test.
    ///   - partitions: partitions of the input and results topics (default 2).
    ///   - brokers: brokers of the embedded cluster (default 1; more to take one down, or move a partition's
    ///     leader or the group's coordinator to another, while the others serve).
    ///   - configure: changes to the configuration (topic and group names are unique already; the HTTP
    ///     server of `/metrics`, `/healthz` and `/readyz`, and the status page with its status topic, are
    ///     off unless turned on here).
    ///   - beforeStart: called with the cluster once its topics exist, before the service starts (e.g. to
    ///     inject errors or delays into the service's first requests).
    /// - Throws: ``KafkaError`` if the cluster or the clients cannot start, or what `beforeStart` threw.
    public static func start(
        registry: WorkerRegistry,
        partitions: Int = 2,
        brokers: Int = 1,
        configure: (inout ServiceConfiguration) -> Void = { _ in },
        beforeStart: (EmbeddedKafkaCluster) throws -> Void = { _ in }
    ) async throws -> PushWorkerTestHarness {
        // Creating the cluster and its topics waits on the mock cluster's thread: off the cooperative pool.
        // On two cores the pool has two threads, and two tests starting at once blocked both of them (the
        // parallel suite's start-up stall).
        let cluster = try await DedicatedThread.run(name: "harness-cluster-start") {
            try EmbeddedKafkaCluster(brokers: brokers)
        }
        let suffix = UUID().uuidString.prefix(8).lowercased()
        var configuration = ServiceConfiguration()
        configuration.kafka = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        // The mock broker answers an empty Fetch only after fetch.wait.max.ms: keep tests snappy.
        configuration.consumer["fetch.wait.max.ms"] = "20"
        // The mock's later rebalances wait session.timeout.ms − 1 s: keep restarts quick.
        configuration.consumer["session.timeout.ms"] = "6000"
        configuration.consumer["heartbeat.interval.ms"] = "500"
        // One group member for all topics, not one per topic (the service's default): the test suite runs
        // dozens of services at once on two cores, and a member per topic doubles their consumers (threads,
        // fetches), which made tests with second-sized bounds fail. Tests of the group's balance and of the
        // first-join hold turn it on with `$0.memberPerTopic = true`.
        configuration.memberPerTopic = false
        configuration.inputTopics = ["pushes-\(suffix)"]
        configuration.resultsTopic = "push-results-\(suffix)"
        configuration.groupId = "pushworker-test-\(suffix)"
        configuration.retries.topic = "push-retries-\(suffix)"
        // Off by default so parallel tests never compete for port 9400; turn it on with
        // `$0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)` and read the
        // port from `harness.service.httpServerPort`.
        configuration.httpServer.enabled = false
        // Off by default too, so tests that do not look at the status page run no status clients; turn it on
        // with `$0.statusPage.enabled = true` (its topic is unique and created here).
        configuration.statusPage.enabled = false
        configuration.statusPage.topic = "push-status-\(suffix)"
        configure(&configuration)
        let topics = configuration.inputTopics + configuration.outputTopics
        let statusTopic = configuration.statusPage.enabled ? configuration.statusPage.topic : nil
        try await DedicatedThread.run(name: "harness-create-topics") {
            for topic in topics { try cluster.createTopic(topic, partitions: partitions) }
            if let statusTopic { try cluster.createTopic(statusTopic, partitions: 1) }
        }
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        try beforeStart(cluster)
        return PushWorkerTestHarness(cluster: cluster, configuration: configuration, registry: registry, producer: producer)
    }

    /// Produces one record to the first input topic and waits for the broker's acknowledgement.
    /// - Returns: where it was written.
    /// - Throws: ``KafkaError`` if it was not delivered.
    @discardableResult
    public func produce(_ value: String?, key: String? = nil, headers: [String: String] = [:], partition: Int32? = nil) async throws -> TopicPartitionOffset {
        try await produce(bytes: value.map { Array($0.utf8) }, key: key, headers: headers, partition: partition)
    }

    /// Produces one record with raw value bytes (`nil` for a null value).
    @discardableResult
    public func produce(bytes: [UInt8]?, key: String? = nil, headers: [String: String] = [:], partition: Int32? = nil) async throws -> TopicPartitionOffset {
        let record = KafkaOutgoingRecord(
            topic: configuration.inputTopics[0], partition: partition, key: key.map { Array($0.utf8) }, value: bytes,
            headers: headers.sorted { $0.key < $1.key }.map { KafkaHeader(name: $0.key, string: $0.value) })
        let report = try await producer.send(record)
        if let error = report.error { throw error }
        return TopicPartitionOffset(report.topicPartition, offset: report.offset)
    }

    /// Produces one record with raw value bytes and headers given as bytes (UTF-8 or not, NUL bytes
    /// included), e.g. to test how a worker or the service treats a binary `apns-id`.
    @discardableResult
    public func produce(bytes: [UInt8]?, key: [UInt8]? = nil, headers: [KafkaHeader], partition: Int32? = nil) async throws -> TopicPartitionOffset {
        let record = KafkaOutgoingRecord(topic: configuration.inputTopics[0], partition: partition, key: key, value: bytes, headers: headers)
        let report = try await producer.send(record)
        if let error = report.error { throw error }
        return TopicPartitionOffset(report.topicPartition, offset: report.offset)
    }

    /// Waits until at least `count` results are acknowledged by the broker, in acknowledgement order.
    /// - Throws: ``KafkaError/Code/timedOut`` if they do not arrive within `timeout`.
    public func results(count: Int, timeout: Duration = .seconds(30)) async throws -> [ReceivedResult] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while collected.count < count {
            if ContinuousClock.now >= deadline {
                throw KafkaError(.timedOut, "\(collected.count) of \(count) results arrived within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return collected.all
    }

    /// Every result acknowledged so far.
    public var receivedResults: [ReceivedResult] { collected.all }

    /// The group's committed offsets for the input partitions (`rd_kafka_committed`), by partition:
    /// the next offset to read, or -1001 (librdkafka's `RD_KAFKA_OFFSET_INVALID`) when nothing is committed
    /// yet. Offsets are committed shortly after their results are acknowledged (librdkafka's
    /// `auto.commit.interval.ms`, 200 ms by pushworker's default), so poll for the value you expect.
    public func committedOffsets() async throws -> [Int32: Int64] {
        try await committedOffsets(topic: configuration.inputTopics[0])
    }

    /// The group's committed offsets for the partitions of `topic` (e.g. the retry topic), as
    /// ``committedOffsets()`` gives them for the first input topic.
    public func committedOffsets(topic: String) async throws -> [Int32: Int64] {
        let configuration = self.configuration
        let partitions = try await DedicatedThread.run(name: "harness-committed") { () throws -> [TopicPartitionOffset] in
            var properties = configuration.kafka
            properties["group.id"] = configuration.groupId
            let consumer = try KafkaConsumer(configuration: properties)
            let result = try consumer.committed(try consumer.partitions(of: topic, timeoutMs: 5000), timeoutMs: 5000)
            try? consumer.close()
            return result
        }
        return Dictionary(uniqueKeysWithValues: partitions.map { ($0.topicPartition.partition, $0.offset) })
    }

    /// Reads `count` records from the results topic itself (keys, headers and values as written).
    public func readResultsTopic(count: Int, timeout: Duration = .seconds(15)) async throws -> [KafkaRecord] {
        try await readTopic(configuration.resultsTopic, count: count, timeout: timeout)
    }

    /// Reads up to `count` records from any topic of the cluster, from the beginning of every partition,
    /// within `timeout`: e.g. the dead-letter topic (`configuration.deadLetter?.topic`, created by
    /// ``start(registry:partitions:brokers:configure:)`` when set). Returns fewer when fewer arrive in time.
    public func readTopic(_ topic: String, count: Int, timeout: Duration = .seconds(15)) async throws -> [KafkaRecord] {
        let configuration = self.configuration
        return try await DedicatedThread.run(name: "harness-read") { () throws -> [KafkaRecord] in
            let consumer = try KafkaConsumer.reader(configuration: configuration.kafka)
            try consumer.assign(try consumer.partitions(of: topic, timeoutMs: 5000).map { TopicPartitionOffset($0, offset: KafkaConsumer.offsetBeginning) })
            let deadline = ContinuousClock.now.advanced(by: timeout)
            var records: [KafkaRecord] = []
            while records.count < count && ContinuousClock.now < deadline {
                if let record = try consumer.poll(timeoutMs: 50) { records.append(record) }
            }
            try? consumer.close()
            return records
        }
    }

    /// Stops the service gracefully (as SIGTERM does) and waits for ``PushWorkerService/run()`` to return.
    /// - Throws: what `run()` threw.
    public func stop() async throws {
        do {
            try await stopService()
        } catch {
            await producer.close()
            throw error
        }
        await producer.close()
    }

    /// Stops the service gracefully but keeps the cluster and the producer: records can still be produced,
    /// e.g. for another member of the group.
    public func stopService() async throws {
        let (service, task) = running.withLock { $0 }
        service.shutdown()
        try await task.value
    }

    /// Waits for the service to end on its own (e.g. after a fatal error), without asking it to stop.
    /// - Throws: what ``PushWorkerService/run()`` threw.
    public func waitForServiceToEnd() async throws {
        let task = running.withLock { $0.task }
        try await task.value
    }

    /// Stops the service fast, by cancelling the task that runs it (as a second SIGTERM to
    /// ``PushWorkerCommandLine``'s `runService` does), and waits for ``PushWorkerService/run()`` to return;
    /// keeps the cluster and the producer. Running jobs are cut short without a result and their records
    /// are left for the group (``PushWorkerService/run()`` describes the fast stop).
    /// - Throws: what `run()` threw.
    public func cancelService() async throws {
        let task = running.withLock { $0.task }
        task.cancel()
        try await task.value
    }

    /// Stops the service, then the cluster.
    public func shutdown() async throws {
        try await stop()
        // Destroying the mock cluster joins its threads: off the cooperative pool.
        let cluster = self.cluster
        try await DedicatedThread.run(name: "harness-cluster-stop") { cluster.shutdown() }
    }
}
