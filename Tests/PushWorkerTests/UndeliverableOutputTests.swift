import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// The class of each librdkafka produce / delivery error (librdkafka 2.0.2 `rdkafka.h` codes).
@Suite struct ProduceFailureTests {
    @Test func codesAreClassified() {
        let expected: [(Int32, String, ProduceFailure)] = [
            (-184, "_QUEUE_FULL", .transient), (-192, "_MSG_TIMED_OUT", .transient), (-195, "_TRANSPORT", .transient),
            (-187, "_ALL_BROKERS_DOWN", .transient), (-185, "_TIMED_OUT", .transient), (5, "LEADER_NOT_AVAILABLE", .transient),
            (6, "NOT_LEADER_FOR_PARTITION", .transient), (7, "REQUEST_TIMED_OUT", .transient), (19, "NOT_ENOUGH_REPLICAS", .transient),
            (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", .transient), (13, "NETWORK_EXCEPTION", .transient), (56, "KAFKA_STORAGE_ERROR", .transient),
            (10, "MSG_SIZE_TOO_LARGE", .recordRejected), (4, "INVALID_MSG_SIZE", .recordRejected), (18, "RECORD_LIST_TOO_LARGE", .recordRejected),
            (87, "INVALID_RECORD", .recordRejected), (2, "INVALID_MSG (CORRUPT_MESSAGE)", .recordRejected), (32, "INVALID_TIMESTAMP", .recordRejected),
            (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", .recordRejected), (-186, "_INVALID_ARG", .recordRejected), (-199, "_BAD_MSG", .recordRejected),
            (-162, "_KEY_SERIALIZATION", .recordRejected), (-161, "_VALUE_SERIALIZATION", .recordRejected),
            (29, "TOPIC_AUTHORIZATION_FAILED", .topicRefused), (31, "CLUSTER_AUTHORIZATION_FAILED", .topicRefused),
            (3, "UNKNOWN_TOPIC_OR_PART", .topicRefused), (-188, "_UNKNOWN_TOPIC", .topicRefused), (-190, "_UNKNOWN_PARTITION", .topicRefused),
            (17, "TOPIC_EXCEPTION", .topicRefused),
            (-150, "_FATAL", .fatal), (-144, "_FENCED", .fatal), (90, "PRODUCER_FENCED", .fatal), (47, "INVALID_PRODUCER_EPOCH", .fatal),
            (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", .fatal), (-148, "_GAPLESS_GUARANTEE", .fatal), (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", .fatal),
            // Not listed: kept and produced again.
            (0, "no librdkafka code", .transient), (-1, "UNKNOWN", .transient), (97, "PRINCIPAL_DESERIALIZATION_FAILURE", .transient),
        ]
        for (code, name, failure) in expected {
            #expect(ProduceFailure.classify(rdKafkaError: code) == failure, "\(name)")
            let error = KafkaError(.deliveryFailed, "x", rdKafkaError: code)
            #expect(error.produceFailure == failure, "\(name)")
            if code != 0 && code != -1 && code != 97 {
                #expect(error.rdKafkaErrorName == name.split(separator: " ").first.map(String.init), "the table uses librdkafka's code for \(name)")
            }
        }
    }

    @Test func librdkafkasRetriableFlagWinsAndQueueFullIsTransient() {
        #expect(ProduceFailure.classify(rdKafkaError: 10, isRetriable: true) == .transient)
        #expect(ProduceFailure.classify(rdKafkaError: 10, isRetriable: false) == .recordRejected)
        #expect(ProduceFailure.classify(rdKafkaError: 29, isRetriable: false) == .topicRefused)
        #expect(KafkaError(.queueFull, "full", rdKafkaError: 10).produceFailure == .transient, "a full queue is never a reason to change a record")
        #expect(KafkaError(.deliveryFailed, "x", rdKafkaError: 29, isRetriable: true).produceFailure == .transient)
    }
}

/// The smaller records that replace a result or a dead letter that can never be produced.
@Suite struct ReplacementTests {
    static let tooLarge = KafkaError(.deliveryFailed, "too large", rdKafkaError: 10)

    static func result(messageId: String = "msg-1", key: [UInt8]? = Array("device-1".utf8), detail: String? = nil, type: String? = "content-update") -> ResultRecord {
        ResultRecord(messageId: messageId, type: type, result: .newData, reason: nil, detail: detail, worker: "w", attempt: 1,
                     source: RecordSource(topic: "pushes", partition: 3, offset: 77), receivedAtMs: 1_767_225_600_000,
                     startedAtMs: 1_767_225_600_001, finishedAtMs: 1_767_225_600_002, durationMs: 1, key: key,
                     apnsIdHeader: Array(messageId.utf8), traceparentHeader: Array("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".utf8))
    }

    static func record(_ result: ResultRecord) -> KafkaOutgoingRecord {
        KafkaOutgoingRecord(topic: "results", key: result.key, value: result.jsonBytes(), headers: [
            KafkaHeader(name: "apns-id", string: result.messageId), KafkaHeader(name: "traceparent", string: result.traceparent ?? ""),
        ])
    }

    static func json(_ record: KafkaOutgoingRecord) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(record.value ?? [])) as? [String: Any])
    }

    @Test func aResultLosesItsHeadersThenItsKeyAndLongFields() throws {
        let longId = String(repeating: "i", count: 5000)
        let result = Self.result(messageId: longId, detail: "worker said hi")
        let original = Self.record(result)
        let first = try #require(ResultPublisher.replacement(of: original, result: result, isDeadLetter: false, stage: 0, error: Self.tooLarge))
        #expect(first.stage == 1 && first.name == "withoutHeaders")
        #expect(first.record.headers.isEmpty)
        #expect(first.record.key == result.key, "the key stays: the result stays in its key's partition")
        #expect(first.record.topic == "results")
        let firstJSON = try Self.json(first.record)
        #expect(firstJSON["messageId"] as? String == longId)
        #expect(firstJSON["result"] as? String == "newData")
        #expect(firstJSON["detail"] as? String == "pushworker: result headers not copied (apns-id 5000 bytes, traceparent 55 bytes): the record with them was refused (MSG_SIZE_TOO_LARGE); detail: worker said hi")

        let second = try #require(ResultPublisher.replacement(of: first.record, result: result, isDeadLetter: false, stage: first.stage, error: Self.tooLarge))
        #expect(second.stage == 2 && second.name == "minimal")
        #expect(second.record.key == nil)
        #expect(second.record.headers.isEmpty)
        #expect((second.record.value?.count ?? .max) < 1000, "bounded whatever the input was")
        let minimal = try Self.json(second.record)
        #expect(minimal["messageId"] as? String == "pushes-3-77", "a messageId over 256 bytes becomes the default one")
        #expect(minimal["type"] as? String == "content-update")
        #expect(minimal["result"] as? String == "newData")
        #expect(minimal["worker"] as? String == "w")
        #expect((minimal["source"] as? [String: Any])?["offset"] as? Int == 77)
        #expect(minimal["detail"] as? String == "pushworker: minimal result, the full one was refused (MSG_SIZE_TOO_LARGE); dropped: key 8 bytes, headers 5073 bytes, detail 14 bytes, messageId 5000 bytes")
        #expect(ResultPublisher.replacement(of: second.record, result: result, isDeadLetter: false, stage: 2, error: Self.tooLarge) == nil,
                "nothing smaller to try: the record is kept")
    }

    @Test func aResultWithoutHeadersGoesStraightToMinimal() throws {
        var result = Self.result(key: Array(repeating: 0x41, count: 2_000_000), type: String(repeating: "t", count: 300))
        result.apnsIdHeader = nil
        result.traceparentHeader = nil
        let record = KafkaOutgoingRecord(topic: "results", key: result.key, value: result.jsonBytes())
        let replacement = try #require(ResultPublisher.replacement(of: record, result: result, isDeadLetter: false, stage: 0, error: Self.tooLarge))
        #expect(replacement.name == "minimal")
        #expect(replacement.record.key == nil)
        let json = try Self.json(replacement.record)
        #expect(json["messageId"] as? String == "msg-1", "a short messageId stays")
        #expect(json["type"] is NSNull)
        #expect(json["detail"] as? String == "pushworker: minimal result, the full one was refused (MSG_SIZE_TOO_LARGE); dropped: key 2000000 bytes, type 300 bytes")
    }

    @Test func aDeadLetterBecomesAStubThenLosesItsKey() throws {
        let input = InputRecord(
            source: RecordSource(topic: "pushes", partition: 1, offset: 9), key: Array("device-2".utf8),
            value: Array(repeating: 0x7B, count: 900_000),
            headers: [("x-big", Array(repeating: 0x61, count: 100)), ("apns-id", Array("m-9".utf8))], receivedAtMs: 0)
        var result = Self.result(detail: String(repeating: "d", count: 2000))
        result.result = .failed
        result.reason = .payloadTooLarge
        result.source = input.source
        let letter = DeadLetterRecord.make(for: input, result: result, topic: "dead")
        let stub = try #require(ResultPublisher.replacement(of: letter, result: nil, isDeadLetter: true, stage: 0, error: Self.tooLarge))
        #expect(stub.stage == 1 && stub.name == "stub")
        #expect(stub.record.topic == "dead")
        #expect(stub.record.value == nil)
        #expect(stub.record.key == Array("device-2".utf8))
        let headers = DeadLetterTests.headers(KafkaRecord(topicPartition: TopicPartition(topic: "dead", partition: 0), offset: 0, value: nil, headers: stub.record.headers))
        #expect(stub.record.headers.allSatisfy { $0.name.hasPrefix("pushworker-") }, "the input's own headers are dropped")
        #expect(headers["pushworker-source-topic"] == "pushes")
        #expect(headers["pushworker-source-partition"] == "1")
        #expect(headers["pushworker-source-offset"] == "9")
        #expect(headers["pushworker-reason"] == "payloadTooLarge")
        #expect(headers["pushworker-attempts"] == "1")
        #expect(headers["pushworker-detail"] == nil, "a pushworker header over 1024 bytes is dropped too")
        #expect(headers["pushworker-dropped-because"] == "MSG_SIZE_TOO_LARGE")
        #expect(headers["pushworker-dropped-value-bytes"] == "900000")
        #expect(headers["pushworker-dropped-headers"] == "3")
        let droppedBytes: Int = 5 + 100 + 7 + 3 + 17 + 2000  // x-big, apns-id and pushworker-detail: names and values
        #expect(headers["pushworker-dropped-headers-bytes"] == String(droppedBytes))
        #expect(headers["pushworker-dropped-key-bytes"] == nil)

        let keyless = try #require(ResultPublisher.replacement(of: stub.record, result: nil, isDeadLetter: true, stage: 1, error: Self.tooLarge))
        #expect(keyless.stage == 2 && keyless.name == "stubWithoutKey")
        #expect(keyless.record.key == nil)
        let keylessHeaders = Dictionary(keyless.record.headers.map { ($0.name, String(decoding: $0.value ?? [], as: UTF8.self)) }, uniquingKeysWith: { a, _ in a })
        #expect(keylessHeaders["pushworker-dropped-key-bytes"] == "8")
        #expect(keylessHeaders["pushworker-dropped-value-bytes"] == "900000", "what the first stub dropped is still said")
        #expect(keylessHeaders["pushworker-dropped-headers"] == "3")
        #expect(keyless.record.headers.filter { $0.name == "pushworker-dropped-because" }.count == 1)
        #expect(ResultPublisher.replacement(of: keyless.record, result: nil, isDeadLetter: true, stage: 2, error: Self.tooLarge) == nil)
    }
}

/// Results and dead letters that cannot be produced, or not yet, on an embedded cluster: every record still
/// gets a result and its offset moves on, and a stuck partition holds back only itself.
@Suite(.timeLimit(.minutes(3)))
struct UndeliverableOutputTests {
    static func silent(_ type: String) -> String { #"{"aps":{"content-available":1},"type":"\#(type)"}"# }

    static func registry(gate: Gate? = nil) -> WorkerRegistry {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        registry.register(type: "throws", worker: ClosureWorker { _ in throw CocoaError(.fileNoSuchFile) }, name: "thrower")
        if let gate {
            registry.register(type: "gated", worker: ClosureWorker { _ in
                await gate.wait()
                return .newData
            })
        }
        return registry
    }

    /// Waits until `condition` holds; throws when `timeout` passes first.
    static func until(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while try await !condition() {
            if ContinuousClock.now >= deadline { throw ProbeFailure("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func results(_ harness: PushWorkerTestHarness, partition: Int32) -> [ReceivedResult] {
        harness.receivedResults.filter { $0.partition == partition }
    }

    @Test func aResultTooLargeForTheProducerIsReplacedAndNothingStalls() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 2) {
            // The producer takes records of at most 3000 bytes (librdkafka message.max.bytes).
            $0.producer["message.max.bytes"] = "3000"
            $0.consumer["auto.commit.interval.ms"] = "200"
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        let hugeKey = String(repeating: "k", count: 4000)
        let longId = String(repeating: "m", count: 2500)
        try await harness.produce(Self.silent("ok"), key: hugeKey, headers: ["apns-id": "big-key"], partition: 0)   // p0 @0
        try await harness.produce(Self.silent("ok"), key: "after", headers: ["apns-id": "after-0"], partition: 0)  // p0 @1
        try await harness.produce(Self.silent("ok"), key: "other", headers: ["apns-id": "other-1"], partition: 1)  // p1 @0
        try await harness.produce(Self.silent("ok"), key: "id", headers: ["apns-id": longId], partition: 1)        // p1 @1
        try await harness.produce(Self.silent("ok"), key: "after", headers: ["apns-id": "after-1"], partition: 1)  // p1 @2
        let results = try await harness.results(count: 5, timeout: .seconds(30))
        #expect(results.count == 5, "one result per input, none more")
        let big = try #require(results.first { $0.partition == 0 && $0.offset == 0 })
        #expect(big.key == nil, "the 4000-byte key cannot go: a minimal result without it")
        #expect(big.headers.isEmpty)
        #expect(big.result == "newData")
        #expect(big.messageId == "big-key")
        #expect(big.detail?.hasPrefix("pushworker: minimal result, the full one was refused (MSG_SIZE_TOO_LARGE); dropped: key 4000 bytes") == true, "\(big.detail ?? "nil")")
        // The long apns-id gets a result too, whatever it is (the dispatcher may refuse the header itself).
        #expect(results.contains { $0.partition == 1 && $0.offset == 1 })
        for (partition, offset, id) in [(Int32(0), Int64(1), "after-0"), (1, 0, "other-1"), (1, 2, "after-1")] {
            let result = results.first { $0.partition == partition && $0.offset == offset }
            #expect(result?.messageId == id)
            #expect(result?.headers["apns-id"] == id, "a result that fits is written as usual")
        }
        let committed = try await DeadLetterTests.committed(harness, reach: [0: 2, 1: 3])
        #expect(committed == [0: 2, 1: 3], "every offset moves on, the replaced one included")
        #expect(harness.service.currentStatistics.recordsReplaced >= 2)

        let port = try await HTTPProbe.port(of: harness.service)
        var metrics = Exposition("")
        let counted = try await HTTPProbe.eventually(timeout: .seconds(10)) {
            metrics = Exposition(try await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").body)
            return (metrics[#"pushworker_results_replaced_total{kind="result",stage="minimal"}"#] ?? 0) >= 1
        }
        #expect(counted, "\(metrics.text)")
        let topic = harness.configuration.resultsTopic
        #expect((metrics[#"pushworker_produce_errors_total{topic="\#(topic)",class="recordRejected"}"#] ?? 0) >= 2)
        #expect(metrics[#"pushworker_produce_errors_total{topic="\#(topic)",class="topicRefused"}"#] == 0)
        #expect(metrics["pushworker_oldest_unacknowledged_result_age_seconds"] == 0, "nothing waits")
        try await harness.shutdown()
    }

    @Test func aDeadLetterTooLargeBecomesAStubAndTheOffsetMovesOn() async throws {
        let dlt = DeadLetterTests.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt)
            $0.consumer["auto.commit.interval.ms"] = "200"
        }
        // Just under librdkafka's default message.max.bytes (1 000 000): the input fits, its dead letter
        // (the same value plus pushworker's headers) does not.
        let value = #"{"aps":{"content-available":1},"type":"ok","x":""# + String(repeating: "y", count: 999_700) + #""}"#
        try await harness.produce(value, key: "k-big", headers: ["x-custom": "v"])        // offset 0: payloadTooLarge
        try await harness.produce(Self.silent("throws"), key: "k-next")                   // offset 1: workerError
        let results = try await harness.results(count: 2)
        #expect(results.first { $0.offset == 0 }?.reason == "payloadTooLarge")
        #expect(results.first { $0.offset == 1 }?.reason == "workerError")
        let committed = try await DeadLetterTests.committed(harness, reach: [0: 2])
        #expect(committed[0] == 2, "both offsets are committed, the stub's included")
        let letters = try await harness.readTopic(dlt, count: 3, timeout: .seconds(3))
        #expect(letters.count == 2, "\(letters.map(DeadLetterTests.headers))")
        let stub = try #require(letters.first { DeadLetterTests.headers($0)["pushworker-source-offset"] == "0" })
        let headers = DeadLetterTests.headers(stub)
        #expect(stub.value == nil)
        #expect(stub.key == Array("k-big".utf8))
        #expect(headers["pushworker-source-topic"] == harness.configuration.inputTopics[0])
        #expect(headers["pushworker-source-partition"] == "0")
        #expect(headers["pushworker-reason"] == "payloadTooLarge")
        #expect(headers["pushworker-dropped-because"] == "MSG_SIZE_TOO_LARGE")
        #expect(headers["pushworker-dropped-value-bytes"] == String(value.utf8.count))
        #expect(headers["pushworker-dropped-headers"] == "1")
        #expect(headers["x-custom"] == nil)
        let next = try #require(letters.first { DeadLetterTests.headers($0)["pushworker-source-offset"] == "1" })
        #expect(next.value == Array(Self.silent("throws").utf8), "a dead letter that fits is written whole")
        #expect(harness.service.currentStatistics.recordsReplaced == 1)
        try await harness.shutdown()
    }

    /// A dead-letter topic without a leader (a retriable error) holds back the input partition of the
    /// failing record only: results behind it wait, in order, and the partition is paused, while another
    /// partition's results flow and commit; once the topic has a leader, everything follows in order.
    @Test func aFailingDeadLetterHoldsBackOnlyItsPartitionThenEverythingFollowsInOrder() async throws {
        let dlt = DeadLetterTests.uniqueTopic()
        let gate = Gate()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(gate: gate), partitions: 2) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt)
            $0.consumer["auto.commit.interval.ms"] = "200"
            // librdkafka gives up on a record after 1 s; pushworker keeps it and produces it again.
            $0.producer["message.timeout.ms"] = "1000"
        }
        try harness.cluster.setTopicError(dlt, error: 5)  // LEADER_NOT_AVAILABLE
        let p0 = TopicPartition(topic: harness.configuration.inputTopics[0], partition: 0)
        try await harness.produce(Self.silent("throws"), key: "same", partition: 0)  // p0 @0: its dead letter cannot go
        try await harness.produce(Self.silent("gated"), key: "same", partition: 0)   // p0 @1, @2: taken, finish later
        try await harness.produce(Self.silent("gated"), key: "same", partition: 0)
        try await Self.until("partition 0 held after its dead letter's first failure") {
            let statistics = harness.service.currentStatistics
            return statistics.resultDeliveryRetries > 0 && statistics.heldPartitions == [p0] && statistics.recordsConsumed == 3
        }
        await gate.open()  // the results of @1 and @2 are published while partition 0 cannot deliver
        try await harness.produce(Self.silent("ok"), key: "same", partition: 0)       // p0 @3: not taken while held
        for _ in 0..<3 { try await harness.produce(Self.silent("ok"), key: "other", partition: 1) }  // p1 @0...2
        try await Self.until("partition 1's results") { Self.results(harness, partition: 1).count == 3 }
        let flowing = try await DeadLetterTests.committed(harness, reach: [1: 3])
        #expect(flowing[1] == 3, "partition 1 commits meanwhile")
        let held = Self.results(harness, partition: 0).compactMap(\.offset)
        #expect(held == [0], "partition 0's later results wait behind the failing dead letter: \(held)")
        #expect(harness.service.currentStatistics.recordsConsumed == 6, "partition 0 is paused: its offset 3 is not taken yet")
        #expect((try await harness.committedOffsets())[0] ?? -1 <= 0, "partition 0's offset 0 is not committed")

        try harness.cluster.setTopicError(dlt, error: 0)
        try await Self.until("partition 0's held results", timeout: .seconds(60)) { Self.results(harness, partition: 0).count == 4 }
        #expect(Self.results(harness, partition: 0).compactMap(\.offset) == [0, 1, 2, 3], "acknowledged in offset order")
        let after = try await DeadLetterTests.committed(harness, reach: [0: 4, 1: 3])
        #expect(after == [0: 4, 1: 3])
        #expect(harness.service.currentStatistics.heldPartitions.isEmpty, "resumed")
        let letters = try await harness.readTopic(dlt, count: 2, timeout: .seconds(3))
        #expect(letters.count == 1, "one probe at a time: one copy")
        #expect(letters.allSatisfy { DeadLetterTests.headers($0)["pushworker-source-offset"] == "0" })
        // The results of key "same" are in one results partition, in offset order.
        let written = try await harness.readResultsTopic(count: 7)
        let same = written.filter { $0.key == Array("same".utf8) }.compactMap { record -> Int? in
            let json = try? JSONSerialization.jsonObject(with: Data(record.value ?? [])) as? [String: Any]
            return (json?["source"] as? [String: Any])?["offset"] as? Int
        }
        #expect(same == [0, 1, 2, 3], "\(same)")
        try await harness.shutdown()
    }

    /// The results topic refuses writes (TOPIC_AUTHORIZATION_FAILED): nothing is dropped, `/readyz` fails
    /// after the threshold, the metric counts; once writes are allowed, every input gets its result.
    @Test func aRefusedResultsTopicKeepsEverythingAndFailsReadinessUntilItAccepts() async throws {
        let gate = Gate()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(gate: gate), partitions: 2) {
            $0.consumer["auto.commit.interval.ms"] = "200"
            $0.consumer["statistics.interval.ms"] = "200"
            $0.health = HealthConfiguration(stuckResultsAfter: .milliseconds(1500))
            // librdkafka marks a topic that refused writes as failed until its next metadata refresh.
            $0.producer["topic.metadata.refresh.interval.ms"] = "500"
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        let port = try await HTTPProbe.port(of: harness.service)
        let base = "http://127.0.0.1:\(port)"
        for index in 0..<6 { try await harness.produce(Self.silent("gated"), key: "k\(index % 3)", partition: Int32(index % 2)) }
        try await Self.until("the records taken") { harness.service.currentStatistics.recordsConsumed == 6 }
        #expect(try await HTTPProbe.eventually(timeout: .seconds(30)) { try await HTTPProbe.request(base + "/readyz").status == 200 })
        // Every Produce request is refused from now on (the only producer left is the service's).
        harness.cluster.pushRequestErrors(apiKey: 0, count: 100_000, error: 29)
        await gate.open()

        var ready = try await HTTPProbe.request(base + "/readyz")
        #expect(try await HTTPProbe.eventually(timeout: .seconds(20)) {
            ready = try await HTTPProbe.request(base + "/readyz")
            return ready.status == 503
        }, "readiness fails once results are stuck longer than 1.5 s: \(ready.body)")
        #expect(ready.body.contains(#""results":false"#), "\(ready.body)")
        #expect(ready.body.contains(#""broker":true"#), "only the results check fails: \(ready.body)")
        var metrics = Exposition(try await HTTPProbe.request(base + "/metrics").body)
        let topic = harness.configuration.resultsTopic
        #expect((metrics[#"pushworker_produce_errors_total{topic="\#(topic)",class="topicRefused"}"#] ?? 0) >= 1, "\(metrics.text)")
        #expect((metrics["pushworker_oldest_unacknowledged_result_age_seconds"] ?? 0) > 1.5)
        #expect(metrics["pushworker_results_waiting"] == 6, "nothing dropped")
        #expect(harness.receivedResults.isEmpty)
        #expect((try await harness.committedOffsets()).values.allSatisfy { $0 < 0 }, "nothing committed")

        harness.cluster.clearRequestErrors(apiKey: 0)
        let results = try await harness.results(count: 6, timeout: .seconds(60))
        #expect(Set(results.compactMap { r in r.partition.flatMap { p in r.offset.map { "\(p)/\($0)" } } }) == ["0/0", "0/1", "0/2", "1/0", "1/1", "1/2"])
        #expect(results.allSatisfy { $0.key != nil && $0.detail == nil }, "the results themselves, not replacements")
        let committed = try await DeadLetterTests.committed(harness, reach: [0: 3, 1: 3])
        #expect(committed == [0: 3, 1: 3])
        #expect(try await HTTPProbe.eventually(timeout: .seconds(20)) { try await HTTPProbe.request(base + "/readyz").status == 200 }, "readiness returns")
        metrics = Exposition(try await HTTPProbe.request(base + "/metrics").body)
        #expect(metrics["pushworker_oldest_unacknowledged_result_age_seconds"] == 0)
        try await harness.shutdown()
    }
}

/// `health.stuckResultsAfterMs`: the threshold of the `/readyz` results check.
@Suite struct HealthConfigurationTests {
    @Test func theThresholdIsReadFromTheFileWithADefaultOf60Seconds() throws {
        #expect(try ConfigurationTests.load("{}").health.stuckResultsAfter == .seconds(60))
        #expect(try ConfigurationTests.load("{health: {stuckResultsAfterMs: 1500}}").health.stuckResultsAfter == .milliseconds(1500))
        #expect(try ConfigurationTests.load("{health: {}}").health == HealthConfiguration())
        let zero = ConfigurationTests.error("{health: {stuckResultsAfterMs: 0}}")
        #expect(zero?.key == "health.stuckResultsAfterMs", "\(String(describing: zero))")
        let typo = ConfigurationTests.error("{health: {stuckResultsAfter: 5}}")
        #expect(typo?.code == .unknownKey, "\(String(describing: typo))")
        #expect(typo?.key == "health.stuckResultsAfter")
        // check-config prints the effective value.
        let printed = try ConfigurationTests.load("{health: {stuckResultsAfterMs: 2500}}").effectiveDescription(registry: nil)
        #expect(printed.contains(#""stuckResultsAfterMs" : 2500"#) || printed.contains(#""stuckResultsAfterMs": 2500"#), "\(printed)")
    }
}

/// A lane keeps its records in publish order whatever order they come back in.
@Suite struct LaneOrderTests {
    static func outgoing(_ sequence: UInt64) -> ResultPublisher.Outgoing {
        ResultPublisher.Outgoing(
            record: KafkaOutgoingRecord(topic: "results", value: nil), source: TopicPartition(topic: "pushes", partition: 0),
            offset: Int64(sequence), labels: ResultKey(ReplacementTests.result()), sequence: sequence, publishedAtNs: 0)
    }

    @Test func recordsComingBackGoBeforeLaterOnes() {
        var lane = ResultPublisher.Lane()
        lane.insert(contentsOf: [10, 12, 14].map(Self.outgoing))
        lane.insert(Self.outgoing(16))
        lane.insert(Self.outgoing(11))  // one failed record back
        #expect(lane.waiting.map(\.sequence) == [10, 11, 12, 14, 16])
        // A burst of failures in any order, merged once.
        lane.insert(contentsOf: [15, 3, 13, 20, 1].map(Self.outgoing))
        #expect(lane.waiting.map(\.sequence) == [1, 3, 10, 11, 12, 13, 14, 15, 16, 20])
        lane.insert(contentsOf: [])
        lane.insert(contentsOf: [2].map(Self.outgoing))
        #expect(lane.waiting.map(\.sequence) == [1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 20])
        var empty = ResultPublisher.Lane()
        empty.insert(contentsOf: [5, 4].map(Self.outgoing))
        #expect(empty.waiting.map(\.sequence) == [4, 5])
        #expect(!empty.isIdle, "waiting records: new ones queue behind them")
        #expect(ResultPublisher.Lane().isIdle)
    }
}
