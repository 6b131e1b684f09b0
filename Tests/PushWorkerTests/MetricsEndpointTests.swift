import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// `/metrics`, `/healthz` and `/readyz` of the real service on an embedded cluster.
@Suite(.timeLimit(.minutes(3)))
struct MetricsEndpointTests {
    static func silent(_ type: String) -> String { #"{"aps":{"content-available":1},"type":"\#(type)"}"# }

    /// Waits `duration` without reacting to cancellation, on a thread of its own (a worker that ignores
    /// cancellation).
    static func deafSleep(_ duration: Duration) async {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: seconds)
                continuation.resume()
            }
        }
    }

    static func registry() -> WorkerRegistry {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        registry.register(type: "unchanged", worker: ClosureWorker { _ in
            try await Task.sleep(for: .milliseconds(30))
            return WorkerOutcome(.noData, reason: "unchanged")
        })
        registry.register(type: "throws", worker: ClosureWorker { _ in throw CocoaError(.fileNoSuchFile) })
        registry.register(type: "slow", worker: ClosureWorker { _ in
            try await Task.sleep(for: .seconds(10))
            return .newData
        }, budget: .milliseconds(200))
        registry.register(type: "deaf", worker: ClosureWorker { _ in
            await deafSleep(.milliseconds(1500))
            return .newData
        }, budget: .milliseconds(200))
        return registry
    }

    @Test func metricsCountWhatTheServiceDidAndHealthFollowsTheCluster() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 2) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.kafka["statistics.interval.ms"] = "300"
            $0.consumer["auto.commit.interval.ms"] = "200"
        }
        let port = try await HTTPProbe.port(of: harness.service)
        let base = "http://127.0.0.1:\(port)"
        #expect(harness.service.httpServerAddress == "127.0.0.1:\(port)")

        // Before the group has assigned anything (the mock's first join takes ~3 s): not ready, but live.
        let early = try await HTTPProbe.request(base + "/readyz")
        if harness.service.currentStatistics.assignedPartitions.isEmpty {
            #expect(early.status == 503)
            #expect(early.body.contains(#""assigned":false"#))
        }
        #expect(try await HTTPProbe.request(base + "/healthz").status == 200)

        let inputs: [(String?, Int32)] = [
            (Self.silent("ok"), 0), (Self.silent("ok"), 1), (Self.silent("ok"), 1),
            (Self.silent("unchanged"), 0), (Self.silent("unchanged"), 1),
            (Self.silent("throws"), 0), (Self.silent("slow"), 1), (Self.silent("deaf"), 0),
            (#"{"aps":{"content-available":0},"type":"ok"}"#, 0),
            (Self.silent("nobody-registered"), 1),
            ("not json", 0),
        ]
        for (value, partition) in inputs { try await harness.produce(value, partition: partition) }
        _ = try await harness.results(count: inputs.count)
        let topic = harness.configuration.inputTopics[0]

        // Lag (from statistics every 300 ms) reaches 0 once the offsets are stored; the deaf worker is counted
        // 1 s after its deadline, while it still runs.
        var metrics = Exposition("")
        let settled = try await HTTPProbe.eventually(timeout: .seconds(30)) {
            let scrape = try await HTTPProbe.request(base + "/metrics")
            metrics = Exposition(scrape.body)
            return metrics[#"pushworker_consumer_lag{topic="\#(topic)",partition="0"}"#] == 0
                && metrics[#"pushworker_consumer_lag{topic="\#(topic)",partition="1"}"#] == 0
                && metrics[#"pushworker_cancellation_ignored_total{type="deaf"}"#] == 1
        }
        #expect(settled, "\(metrics.text)")

        #expect(metrics["pushworker_records_consumed_total"] == 11)
        let expected: [String: Double] = [
            #"{type="ok",result="newData",reason=""}"#: 3,
            #"{type="unchanged",result="noData",reason="unchanged"}"#: 2,
            #"{type="throws",result="failed",reason="workerError"}"#: 1,
            #"{type="slow",result="failed",reason="timeout"}"#: 1,
            #"{type="deaf",result="failed",reason="timeout"}"#: 1,
            #"{type="ok",result="noData",reason="notSilent"}"#: 1,
            #"{type="(unregistered)",result="noData",reason="noWorker"}"#: 1,
            #"{type="",result="failed",reason="invalidPayload"}"#: 1,
        ]
        for (labels, count) in expected {
            #expect(metrics["pushworker_results_total" + labels] == count, "results_total\(labels)")
        }
        #expect(metrics.total("pushworker_results_total") == 11, "one result per record, no other series")
        // The histogram counts the jobs a worker ran: 3 + 2 + 1 + 1 + 1.
        for (type, runs) in [("ok", 3.0), ("unchanged", 2), ("throws", 1), ("slow", 1), ("deaf", 1)] {
            #expect(metrics[#"pushworker_worker_duration_seconds_count{type="\#(type)"}"#] == runs, "\(type)")
            #expect(metrics[#"pushworker_worker_duration_seconds_bucket{type="\#(type)",le="+Inf"}"#] == runs, "\(type)")
        }
        #expect(metrics.total("pushworker_worker_duration_seconds_count") == 8)
        #expect(metrics[#"pushworker_worker_duration_seconds_bucket{type="slow",le="0.1"}"#] == 0)
        #expect(metrics[#"pushworker_worker_duration_seconds_bucket{type="slow",le="0.25"}"#] == 1, "a timeout counts its budget")
        #expect(metrics[#"pushworker_timeouts_total{type="slow"}"#] == 1)
        #expect(metrics[#"pushworker_timeouts_total{type="deaf"}"#] == 1)
        #expect(metrics[#"pushworker_timeouts_total{type="ok"}"#] == 0)
        // Not asserted here: that the slow worker, which stops at cancellation, is not counted. In the
        // parallel suite the cooperative pool was seen busy for over the 1 s grace at the start, so that it
        // was counted; BudgetedExecutorTests and NoopWorkerTests check it on the executor.
        #expect(metrics["pushworker_jobs_in_flight"] == 0)
        #expect(metrics["pushworker_records_buffered"] == 0)
        #expect(metrics["pushworker_dedupe_entries"] == 0)
        #expect(metrics["pushworker_results_waiting"] == 0)
        #expect(metrics["pushworker_result_delivery_retries_total"] == 0)
        #expect(metrics[#"pushworker_rebalances_total{event="assigned"}"#] ?? 0 >= 1)
        // The input topic's 2 partitions and the retry topic's 2.
        #expect(metrics["pushworker_assigned_partitions"] == 4)
        #expect(metrics[#"pushworker_kafka_brokers_up{client="consumer"}"#] == 1)
        #expect(metrics[#"pushworker_kafka_brokers_up{client="producer"}"#] == 1)
        #expect(metrics["pushworker_kafka_consumer_group_up"] == 1)
        #expect(metrics["pushworker_kafka_producer_queue_messages"] == 0)
        #expect(metrics[#"pushworker_kafka_request_timeouts_total{client="consumer"}"#] != nil)
        #expect(metrics[#"pushworker_kafka_statistics_age_seconds{client="consumer"}"#] != nil)
        #expect(metrics[#"pushworker_build_info{version="\#(PushWorkerService.version)",librdkafka="\#(KafkaLibrary.versionString)"}"#] == 1)

        let scrape = try await HTTPProbe.request(base + "/metrics")
        #expect(scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let head = try await HTTPProbe.request(base + "/metrics", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try await HTTPProbe.request(base + "/metrics", method: "POST").status == 405)
        #expect(try await HTTPProbe.request(base + "/nothing-here").status == 404)

        // Ready: connected, in the group, partitions assigned.
        var ready = (status: 0, body: "", headers: [String: String]())
        #expect(try await HTTPProbe.eventually(timeout: .seconds(20)) {
            ready = try await HTTPProbe.request(base + "/readyz")
            return ready.status == 200
        }, "\(ready.body)")
        #expect(ready.body == #"{"ready":true,"checks":{"broker":true,"group":true,"assigned":true,"results":true,"serving":true}}"# + "\n")
        let live = try await HTTPProbe.request(base + "/healthz")
        #expect(live.status == 200 && live.body == "ok\n")

        // The only broker goes down: the next statistics show no connection up, and readiness follows.
        // While no child process starts: one would hold a copy of the listener the mock closes and binds again.
        try SpawnGate.whileNoChildStarts { try harness.cluster.setBrokerDown(1) }
        var down = (status: 0, body: "", headers: [String: String]())
        #expect(try await HTTPProbe.eventually(timeout: .seconds(30)) {
            down = try await HTTPProbe.request(base + "/readyz")
            return down.status == 503
        }, "\(down.body)")
        #expect(down.body.contains(#""broker":false"#))
        #expect(try await HTTPProbe.request(base + "/healthz").status == 200, "a broker outage is not a liveness failure")
        try harness.cluster.setBrokerUp(1)
        #expect(try await HTTPProbe.eventually(timeout: .seconds(30)) { try await HTTPProbe.request(base + "/readyz").status == 200 })

        try await harness.stop()
        #expect(harness.service.httpServerPort == nil)
        await #expect(throws: (any Error).self, "the server stops with the service") { _ = try await HTTPProbe.request(base + "/healthz", timeout: .seconds(2)) }
        harness.cluster.shutdown()
    }

    @Test func aBusyPortStopsTheServiceWithAClearError() async throws {
        let first = try await PushWorkerTestHarness.start(registry: Self.registry()) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        let port = try await HTTPProbe.port(of: first.service)
        var configuration = first.configuration
        configuration.groupId += "-second"
        configuration.httpServer.port = port
        let second = PushWorkerService(configuration: configuration, registry: Self.registry())
        do {
            try await second.run()
            Issue.record("the second service ran on a busy port")
        } catch {
            let text = "\(error)"
            #expect(text.contains("port \(port)"), "\(text)")
            #expect(text.contains("httpServer.port") && text.contains("PUSHWORKER_HTTP_PORT"), "\(text)")
            #expect(!text.contains("\n"))
        }
        try await first.shutdown()
    }

    /// The `/readyz` answer before the pipeline exists: not ready, nothing connected, still serving.
    @Test func readinessBeforeThePipelineExists() {
        let response = ServiceHealth.readinessResponse(broker: false, group: false, assigned: false, serving: true)
        #expect(response.status == 503)
        #expect(response.contentType == "application/json")
        #expect(response.body == Array(#"{"ready":false,"checks":{"broker":false,"group":false,"assigned":false,"results":true,"serving":true}}"#.utf8) + [0x0A])
    }

    @Test func labelsFromInputAndWorkersAreBounded() throws {
        let metrics = try ServiceMetrics(registeredTypes: ["known"])
        #expect(metrics.typeLabel("known") == "known")
        #expect(metrics.typeLabel("anything-else") == "(unregistered)")
        #expect(metrics.typeLabel(nil) == "")
        func result(type: String?, reason: String?) -> ResultRecord {
            ResultRecord(messageId: "m", type: type, result: .noData, reason: reason.map { ResultReason($0) }, detail: nil, worker: nil,
                         source: RecordSource(topic: "t", partition: 0, offset: 0), receivedAtMs: 0, startedAtMs: nil, finishedAtMs: 0, durationMs: 0)
        }
        // 5000 distinct types from input and 100 worker-defined reasons of one type.
        metrics.resultsAcknowledged((0..<5000).map { ResultKey(result(type: "t\($0)", reason: "noWorker")) })
        metrics.resultsAcknowledged((0..<100).map { ResultKey(result(type: "known", reason: "reason-\($0)")) })
        metrics.resultsAcknowledged([ResultKey(result(type: "known", reason: "reason-1"))])
        let samples = metrics.results.snapshot().samples
        #expect(samples.count == 1 + ServiceMetrics.reasonsPerType + 1)
        #expect(metrics.results.value(labels: ["(unregistered)", "noData", "noWorker"]) == 5000)
        #expect(metrics.results.value(labels: ["known", "noData", "reason-1"]) == 2)
        #expect(metrics.results.value(labels: ["known", "noData", "(other)"]) == 36)
        metrics.workerRan(type: "random-\(UUID())", durationMs: 5)
        #expect(metrics.workerDuration.count(labels: ["(unregistered)"]) == 1)
    }

    @Test func statisticsBecomeLagBrokerAndTimeoutMetrics() throws {
        let metrics = try ServiceMetrics(registeredTypes: [])
        let tp0 = TopicPartition(topic: "t", partition: 0)
        let tp1 = TopicPartition(topic: "t", partition: 1)
        metrics.rebalanced(.assigned([tp0, tp1]))
        func report(timeouts: Int, lag0: Int64) -> KafkaStatistics {
            KafkaStatistics(
                clientName: "c", clientType: "consumer", time: 0, messagesQueued: 0,
                brokers: [.init(name: "b/1", nodeId: 1, source: "learned", state: "UP", requestTimeouts: timeouts),
                          .init(name: "GroupCoordinator", nodeId: 1, source: "logical", state: "UP", requestTimeouts: 0)],
                partitions: [.init(topic: "t", partition: 0, consumerLag: lag0, highWatermark: 9),
                             .init(topic: "t", partition: 1, consumerLag: -1, highWatermark: 7, lowWatermark: 2),
                             .init(topic: "t", partition: 2, consumerLag: 3, highWatermark: 3)],
                consumerGroup: .init(state: "up", joinState: "steady", assignmentSize: 2, rebalanceCount: 1))
        }
        metrics.statistics(report(timeouts: 2, lag0: 5), client: .consumer)
        #expect(metrics.consumerLag.value(labels: ["t", "0"]) == 5)
        #expect(metrics.consumerLag.value(labels: ["t", "1"]) == 5, "no stored or committed offset yet: every record counts")
        #expect(metrics.consumerLag.value(labels: ["t", "2"]) == nil, "not assigned here")
        #expect(metrics.brokersUp.value(labels: ["consumer"]) == 1, "the logical coordinator is not a broker")
        #expect(metrics.consumerGroupUp.value() == 1)
        #expect(metrics.requestTimeouts.value(labels: ["consumer"]) == 2)
        metrics.statistics(report(timeouts: 5, lag0: 0), client: .consumer)
        #expect(metrics.requestTimeouts.value(labels: ["consumer"]) == 5, "counted by the increase")
        #expect(metrics.consumerLag.value(labels: ["t", "0"]) == 0)
        metrics.rebalanced(.revoking([tp0]))
        #expect(metrics.consumerLag.value(labels: ["t", "0"]) == nil, "a revoked partition's lag goes away")
        #expect(metrics.rebalances.value(labels: ["revoked"]) == 1)
        #expect(metrics.assigned == [tp1])
    }

    @Test func livenessNamesAThreadThatStopsMakingRounds() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        var configuration = ServiceConfiguration()
        configuration.kafka = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        configuration.consumer["fetch.wait.max.ms"] = "20"
        // As PushWorkerTestHarness: the embedded cluster holds a rebalance after the first (one of the
        // process's group members missing the first generation) for session.timeout.ms − 1 s.
        configuration.consumer["session.timeout.ms"] = "6000"
        configuration.consumer["heartbeat.interval.ms"] = "500"
        configuration.memberPerTopic = false  // as PushWorkerTestHarness: one member, a lighter suite
        configuration.inputTopics = ["pushes-\(suffix)"]
        configuration.resultsTopic = "results-\(suffix)"
        configuration.groupId = "liveness-\(suffix)"
        configuration.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        try cluster.createTopic(configuration.inputTopics[0], partitions: 1)
        try cluster.createTopic(configuration.resultsTopic, partitions: 1)
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        // onResult runs on the results producer's poll thread: blocking it there wedges that thread. For 10 s,
        // so that /healthz says 503 for 8.5 s: with 5 s a loaded machine answered no probe in the 3.5 s window.
        let service = PushWorkerService(configuration: configuration, registry: registry, logger: PushWorkerLogger(label: "test"), onResult: { _ in
            Thread.sleep(forTimeInterval: 10)
        }, stallThreshold: .milliseconds(1500))
        let running = Task { try await service.run() }
        let base = "http://127.0.0.1:\(try await HTTPProbe.port(of: service))"
        // (The idle deadline thread wakes every 500 ms: a threshold of 1.5 s leaves it room.)
        #expect(try await HTTPProbe.eventually(timeout: .seconds(10)) { try await HTTPProbe.request(base + "/healthz").status == 200 })
        let producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        _ = try await producer.send(KafkaOutgoingRecord(topic: configuration.inputTopics[0], value: Array(Self.silent("ok").utf8)))
        var stuck = (status: 0, body: "", headers: [String: String]())
        #expect(try await HTTPProbe.eventually(timeout: .seconds(30)) {
            stuck = try await HTTPProbe.request(base + "/healthz")
            return stuck.status == 503
        })
        #expect(stuck.body.contains(#""producerPoll":false"#), "\(stuck.body)")
        #expect(stuck.body.contains(#""consumerLoop":true"#), "\(stuck.body)")
        #expect(stuck.headers["content-type"] == "application/json")
        // Once the callback returns, the thread makes rounds again.
        #expect(try await HTTPProbe.eventually(timeout: .seconds(20)) { try await HTTPProbe.request(base + "/healthz").status == 200 })
        service.shutdown()
        try await running.value
        await producer.close()
        cluster.shutdown()
    }
}
