import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Testing

/// The dead-letter record itself: the input's key, value and headers, plus pushworker's.
@Suite struct DeadLetterRecordTests {
    static func result(reason: String?, detail: String?, worker: String?, attempt: Int = 1, finishedAtMs: Int64 = 1_767_225_600_123) -> ResultRecord {
        ResultRecord(messageId: "msg-7", type: "content-update", result: .failed, reason: reason.map { ResultReason($0) }, detail: detail,
                     worker: worker, attempt: attempt, source: RecordSource(topic: "pushes-a", partition: 2, offset: 41),
                     receivedAtMs: finishedAtMs - 10, startedAtMs: nil, finishedAtMs: finishedAtMs, durationMs: 0,
                     key: Array("device-9".utf8), apnsIdHeader: Array("msg-7".utf8))
    }

    static func flat(_ headers: [KafkaHeader]) -> [String] {
        headers.map { "\($0.name)=\($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "<null>")" }
    }

    @Test func headersAreTheInputsPlusPushworkers() {
        let input = InputRecord(
            source: RecordSource(topic: "pushes-a", partition: 2, offset: 41), key: Array("device-9".utf8),
            value: Array(#"{"aps":{"content-available":1},"type":"content-update"}"#.utf8),
            headers: [
                ("z-first", Array("1".utf8)), ("pushworker-reason", Array("stale".utf8)), ("apns-id", Array("msg-7".utf8)),
                ("dup", Array("a".utf8)), ("pushworker-attempts", Array("1".utf8)), ("dup", Array("b".utf8)),
                ("no-value", nil), ("pushworker-custom", Array("x".utf8)), ("Pushworker-Case", Array("kept".utf8)),
            ],
            receivedAtMs: 0)
        let record = DeadLetterRecord.make(for: input, result: Self.result(reason: "workerError", detail: "exit status 3", worker: "exec:job", attempt: 2),
                                           topic: "dead")
        #expect(record.topic == "dead")
        #expect(record.partition == nil, "partitioned by key like any record")
        #expect(record.key == Array("device-9".utf8))
        #expect(record.value == input.value)
        #expect(Self.flat(record.headers) == [
            // The input's own headers, in order, duplicates and null values included; earlier pushworker-*
            // headers (a previous failure) are gone.
            "z-first=1", "apns-id=msg-7", "dup=a", "dup=b", "no-value=<null>", "Pushworker-Case=kept",
            "pushworker-attempts=2", "pushworker-reason=workerError", "pushworker-detail=exit status 3",
            "pushworker-worker=exec:job", "pushworker-message-id=msg-7", "pushworker-source-topic=pushes-a",
            "pushworker-source-partition=2", "pushworker-source-offset=41", "pushworker-failed-at=2026-01-01T00:00:00.123Z",
        ])
    }

    @Test func headerValuesStayByteExact() {
        let headers: [(name: String, value: [UInt8]?)] = [
            ("apns-id", [0xFF, 0xFE]), ("traceparent", [0xFF, 0xFE, 0xFD]), ("with-nul", [0x61, 0x00, 0x62]), ("empty", []),
        ]
        let input = InputRecord(source: RecordSource(topic: "pushes-a", partition: 0, offset: 3), key: [0x00, 0xFF],
                                value: Array(#"{"aps":{"content-available":1},"type":"ok\u0000evil"}"#.utf8), headers: headers, receivedAtMs: 0)
        let record = DeadLetterRecord.make(for: input, result: Self.result(reason: "invalidPayload", detail: nil, worker: nil), topic: "dead")
        #expect(record.value == input.value)
        #expect(record.key == [0x00, 0xFF])
        #expect(Array(record.headers.prefix(4)).map(\.name) == headers.map(\.name))
        #expect(Array(record.headers.prefix(4)).map(\.value) == headers.map(\.value))
    }

    @Test func aRejectedRecordKeepsItsNullValueAndNullKey() {
        let input = InputRecord(source: RecordSource(topic: "pushes-a", partition: 0, offset: 3), key: nil, value: nil, receivedAtMs: 0)
        var result = Self.result(reason: "invalidPayload", detail: nil, worker: nil)
        result.source = input.source
        result.messageId = "pushes-a-0-3"
        let record = DeadLetterRecord.make(for: input, result: result, topic: "dead")
        #expect(record.value == nil, "a null value stays null")
        #expect(record.key == nil, "a null key stays null")
        // No detail and no worker: no such headers.
        #expect(Self.flat(record.headers) == [
            "pushworker-attempts=1", "pushworker-reason=invalidPayload", "pushworker-message-id=pushes-a-0-3",
            "pushworker-source-topic=pushes-a", "pushworker-source-partition=0", "pushworker-source-offset=3",
            "pushworker-failed-at=2026-01-01T00:00:00.123Z",
        ])
    }

    @Test func emptyKeyAndValueStayEmptyNotNull() {
        let input = InputRecord(source: RecordSource(topic: "t", partition: 0, offset: 0), key: [], value: [], receivedAtMs: 0)
        let record = DeadLetterRecord.make(for: input, result: Self.result(reason: "invalidPayload", detail: "empty", worker: nil), topic: "dead")
        #expect(record.key == [])
        #expect(record.value == [])
    }
}

/// The dead-letter topic on an embedded cluster: which records are copied, what the copies hold, when
/// the input offset is committed, the counter.
@Suite(.timeLimit(.minutes(2)))
struct DeadLetterTests {
    static func silent(_ type: String) -> String { #"{"aps":{"content-available":1},"type":"\#(type)"}"# }

    static func registry() -> WorkerRegistry {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        registry.register(type: "unchanged", worker: ClosureWorker { _ in WorkerOutcome(.noData, reason: "unchanged") })
        registry.register(type: "throws", worker: ClosureWorker { _ in throw CocoaError(.fileNoSuchFile) }, name: "thrower")
        registry.register(type: "slow", worker: ClosureWorker { _ in
            try await Task.sleep(for: .seconds(10))
            return .newData
        }, name: "sleeper", budget: .milliseconds(200))
        return registry
    }

    static func uniqueTopic() -> String { "dead-letters-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Headers as name → value (UTF-8); the first of a name wins.
    static func headers(_ record: KafkaRecord) -> [String: String] {
        Dictionary(record.headers.map { ($0.name, $0.value.map { String(decoding: $0, as: UTF8.self) } ?? "<null>") }, uniquingKeysWith: { a, _ in a })
    }

    /// Polls the group's committed offsets until `expected` (by partition) or `timeout`; returns the last ones.
    static func committed(_ harness: PushWorkerTestHarness, reach expected: [Int32: Int64], timeout: Duration = .seconds(30)) async throws -> [Int32: Int64] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var last = try await harness.committedOffsets()
        while ContinuousClock.now < deadline {
            if expected.allSatisfy({ last[$0.key] == $0.value }) { return last }
            try await Task.sleep(for: .milliseconds(200))
            last = try await harness.committedOffsets()
        }
        return last
    }

    @Test func failedRecordsAreCopiedOnceWithTheirInputAndWhy() async throws {
        let dlt = Self.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 2) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt)
            $0.consumer["auto.commit.interval.ms"] = "200"
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        let inputTopic = harness.configuration.inputTopics[0]
        // value, key, headers, expected reason when dead-lettered (nil: not dead-lettered)
        let inputs: [(value: String?, key: String?, headers: [String: String], deadLetter: String?)] = [
            (Self.silent("throws"), "k-throws", ["apns-id": "m-throws", "x-custom": "v1", "pushworker-reason": "stale"], "workerError"),
            ("not json", "k-bad", ["x-custom": "v2"], "invalidPayload"),
            (nil, "k-null", [:], "invalidPayload"),
            (Self.silent("slow"), nil, ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"], "timeout"),
            (Self.silent("ok"), "k-ok", ["x-custom": "v3"], nil),
            (Self.silent("unchanged"), "k-unchanged", [:], nil),
            (Self.silent("nobody"), "k-noworker", [:], nil),
            (#"{"aps":{"content-available":0},"type":"ok"}"#, "k-notsilent", [:], nil),
        ]
        var written: [TopicPartitionOffset] = []
        for (index, input) in inputs.enumerated() {
            written.append(try await harness.produce(input.value, key: input.key, headers: input.headers, partition: Int32(index % 2)))
        }
        let results = try await harness.results(count: inputs.count)
        #expect(results.count == inputs.count)
        // Every input offset is committed once its result (and dead letter) are acknowledged.
        var ends: [Int32: Int64] = [:]
        for at in written { ends[at.topicPartition.partition] = max(ends[at.topicPartition.partition] ?? 0, at.offset + 1) }
        let committed = try await Self.committed(harness, reach: ends)
        #expect(committed == ends)

        // The dead letters are all acknowledged by now (the offsets wait for them): read one more than
        // expected to see that there are no others.
        let expected = inputs.indices.filter { inputs[$0].deadLetter != nil }
        let letters = try await harness.readTopic(dlt, count: expected.count + 1, timeout: .seconds(3))
        #expect(letters.count == expected.count, "\(letters.map(Self.headers))")
        for index in expected {
            let input = inputs[index], at = written[index]
            let matching = letters.filter {
                Self.headers($0)["pushworker-source-offset"] == String(at.offset)
                    && Self.headers($0)["pushworker-source-partition"] == String(at.topicPartition.partition)
            }
            #expect(matching.count == 1, "input \(index) is dead-lettered once")
            guard let letter = matching.first else { continue }
            #expect(letter.key == input.key.map { Array($0.utf8) }, "input \(index)")
            #expect(letter.value == input.value.map { Array($0.utf8) }, "input \(index): value byte for byte, null stays null")
            let own = input.headers.filter { !$0.key.hasPrefix("pushworker-") }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            let added = letter.headers.filter { $0.name.hasPrefix("pushworker-") }.map(\.name)
            #expect(DeadLetterRecordTests.flat(letter.headers.filter { !$0.name.hasPrefix("pushworker-") }) == own, "input \(index): its own headers, in order")
            let result = try #require(results.first { $0.partition == at.topicPartition.partition && $0.offset == at.offset })
            let ran = result.json["worker"]?.stringValue != nil
            #expect(ran == (input.deadLetter != "invalidPayload"))
            #expect(result.detail != nil)
            #expect(added == ["pushworker-attempts", "pushworker-reason", "pushworker-detail"] + (ran ? ["pushworker-worker"] : [])
                        + ["pushworker-message-id", "pushworker-source-topic", "pushworker-source-partition", "pushworker-source-offset", "pushworker-failed-at"],
                    "input \(index): \(added)")
            let headers = Self.headers(letter)
            #expect(headers["pushworker-attempts"] == "1")
            #expect(headers["pushworker-reason"] == input.deadLetter)
            #expect(headers["pushworker-reason"] == result.reason)
            #expect(headers["pushworker-detail"] == result.detail)
            #expect(headers["pushworker-worker"] == result.json["worker"]?.stringValue)
            #expect(headers["pushworker-message-id"] == result.messageId)
            #expect(headers["pushworker-source-topic"] == inputTopic)
            #expect(headers["pushworker-failed-at"] == result.json["finishedAt"]?.stringValue)
        }
        let byReason = Dictionary(grouping: letters) { Self.headers($0)["pushworker-reason"] ?? "" }
        #expect(byReason["workerError"]?.first.map { Self.headers($0)["pushworker-worker"] } == "thrower")
        #expect(byReason["timeout"]?.first.map { Self.headers($0)["pushworker-worker"] } == "sleeper")
        #expect(byReason["workerError"]?.first.map { Self.headers($0)["pushworker-message-id"] } == "m-throws")

        // pushworker_dead_letters_total counts them by payload type and reason.
        let port = try await HTTPProbe.port(of: harness.service)
        var metrics = Exposition("")
        let counted = try await HTTPProbe.eventually(timeout: .seconds(10)) {
            metrics = Exposition(try await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").body)
            return metrics.total("pushworker_dead_letters_total") == Double(expected.count)
        }
        #expect(counted, "\(metrics.text)")
        #expect(metrics[#"pushworker_dead_letters_total{type="throws",reason="workerError"}"#] == 1)
        #expect(metrics[#"pushworker_dead_letters_total{type="slow",reason="timeout"}"#] == 1)
        #expect(metrics[#"pushworker_dead_letters_total{type="",reason="invalidPayload"}"#] == 2)
        // Results are counted as before, dead letters apart.
        #expect(metrics.total("pushworker_results_total") == Double(inputs.count))
        try await harness.shutdown()
    }

    @Test func onlyListedReasonsAreDeadLettered() async throws {
        let dlt = Self.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt, reasons: ["timeout"])
            $0.consumer["auto.commit.interval.ms"] = "200"
        }
        try await harness.produce(Self.silent("throws"), key: "k0")   // 0: workerError
        try await harness.produce("not json", key: "k1")               // 1: invalidPayload
        try await harness.produce(Self.silent("slow"), key: "k2")      // 2: timeout
        try await harness.produce(Self.silent("ok"), key: "k3")        // 3: newData
        let results = try await harness.results(count: 4)
        #expect(Set(results.compactMap(\.reason)) == ["workerError", "invalidPayload", "timeout"])
        let committed = try await Self.committed(harness, reach: [0: 4])
        #expect(committed[0] == 4)
        let letters = try await harness.readTopic(dlt, count: 2, timeout: .seconds(3))
        try await harness.shutdown()
        #expect(letters.count == 1, "\(letters.map(Self.headers))")
        #expect(letters.first.map { Self.headers($0)["pushworker-reason"] } == "timeout")
        #expect(letters.first?.key == Array("k2".utf8))
        #expect(letters.first.map { Self.headers($0)["pushworker-source-offset"] } == "2")
    }

    @Test func withoutADeadLetterTopicNothingIsCopied() async throws {
        let unused = Self.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1)
        try harness.cluster.createTopic(unused, partitions: 1)
        try await harness.produce(Self.silent("throws"))
        _ = try await harness.results(count: 1)
        let letters = try await harness.readTopic(unused, count: 1, timeout: .seconds(1))
        try await harness.shutdown()
        #expect(letters.isEmpty)
        #expect(harness.configuration.deadLetter == nil)
    }

    /// Contract section 4 for dead letters: the input offset is committed only once both the result and
    /// the dead letter are acknowledged, and a dead letter the broker does not take is produced again.
    @Test func theOffsetWaitsUntilTheDeadLetterIsDelivered() async throws {
        let dlt = Self.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt)
            $0.consumer["auto.commit.interval.ms"] = "200"
            // librdkafka gives up on a record after 1.5 s; pushworker must produce it again.
            $0.producer["message.timeout.ms"] = "1500"
        }
        // The dead-letter topic has no leader: its records wait in librdkafka, then time out. The results
        // topic is not affected.
        try harness.cluster.setTopicError(dlt, error: 5)  // LEADER_NOT_AVAILABLE
        try await harness.produce(Self.silent("ok"), key: "k0")                                     // offset 0
        try await harness.produce(Self.silent("throws"), key: "k1", headers: ["x-custom": "kept"])  // offset 1
        let results = try await harness.results(count: 2)
        #expect(results.first { $0.offset == 1 }?.reason == "workerError", "the failed result itself is acknowledged")
        // Offset 0 is committed; offset 1 is not while its dead letter is undelivered, through retries.
        let early = try await Self.committed(harness, reach: [0: 1])
        #expect(early[0] == 1)
        let holdUntil = ContinuousClock.now.advanced(by: .seconds(4))
        var held: [Int64] = []
        while ContinuousClock.now < holdUntil {
            held.append(try await harness.committedOffsets()[0] ?? -1)
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(held.allSatisfy { $0 == 1 }, "offset 1 was committed before its dead letter was delivered: \(held)")
        #expect(harness.service.currentStatistics.resultDeliveryRetries > 0, "the dead letter timed out and was produced again")

        // The topic recovers: the dead letter is delivered, then the offset is committed.
        try harness.cluster.setTopicError(dlt, error: 0)
        let after = try await Self.committed(harness, reach: [0: 2])
        #expect(after[0] == 2, "the offset is committed once the dead letter is delivered")
        let letters = try await harness.readTopic(dlt, count: 2, timeout: .seconds(3))
        #expect(letters.count == 1, "nothing lost, nothing doubled: \(letters.map(Self.headers))")
        #expect(letters.first?.key == Array("k1".utf8))
        #expect(letters.first.map { Self.headers($0)["x-custom"] } == "kept")
        #expect(letters.first.map { Self.headers($0)["pushworker-source-offset"] } == "1")
        #expect(harness.receivedResults.count == 2, "the result was produced once")
        try await harness.shutdown()
    }
}
