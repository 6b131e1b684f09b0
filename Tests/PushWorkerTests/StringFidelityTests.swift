import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// Issue 8 through the running service on an embedded cluster: strings keep all their bytes, headers are
/// copied byte for byte and bounded, duplicate envelope keys and deep values get their documented results.
@Suite(.timeLimit(.minutes(2)))
struct StringFidelityTests {
    /// Produces `value` with raw header bytes (the harness's own `produce` takes text headers) through a
    /// producer that allows records up to 4 MB, to the harness's input topic.
    static func produce(_ harness: PushWorkerTestHarness, _ value: String, headers: [KafkaHeader], partition: Int32? = nil) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration([
            "bootstrap.servers": harness.cluster.bootstrapServers, "message.max.bytes": "4000000",
        ]))
        let report = try await producer.send(KafkaOutgoingRecord(
            topic: harness.configuration.inputTopics[0], partition: partition, value: Array(value.utf8), headers: headers))
        await producer.close()
        if let error = report.error { throw error }
    }

    /// A registry whose `ok` and `evil` workers count its runs in `runs` (by message id).
    fileprivate static func registry(_ runs: Runs) -> WorkerRegistry {
        var registry = WorkerRegistry()
        for type in ["ok", "evil"] {
            registry.register(type: type, worker: ClosureWorker { job in
                runs.add("\(type):\(job.messageId)")
                return .newData
            })
        }
        return registry
    }

    @Test func aNulInTheTypeReachesNoWorkerAndTheResultHasTheWholeType() async throws {
        let runs = Runs()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(runs))
        try await harness.produce(#"{"aps":{"content-available":1},"type":"ok\u0000evil"}"#, headers: ["apns-id": "nul-type"])
        try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#, headers: ["apns-id": "plain"])
        let results = try await harness.results(count: 2)
        try await harness.shutdown()
        let nul = try #require(results.first { $0.messageId == "nul-type" })
        #expect(nul.result == "noData")
        #expect(nul.reason == "noWorker")
        #expect(nul.json["type"]?.stringValue == "ok\u{0}evil")
        #expect(String(decoding: nul.value, as: UTF8.self).contains(#""type":"ok\u0000evil""#))
        #expect(runs.all == ["ok:plain"], "the ok worker ran only for the record whose type is ok")
    }

    @Test func headersThatAreNotUTF8ComeBackByteForByte() async throws {
        let runs = Runs()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(runs))
        let apnsId: [UInt8] = [0xFF, 0xFE]
        let traceparent: [UInt8] = [0xFF, 0xFE, 0xFD]
        let push = Array(#"{"aps":{"content-available":1},"type":"ok"}"#.utf8)
        try await harness.produce(bytes: push, headers: [KafkaHeader(name: "apns-id", value: apnsId), KafkaHeader(name: "traceparent", value: traceparent)])
        // And a record whose apns-id holds a NUL: the whole id is the message id and the header.
        let nulId: [UInt8] = Array("id".utf8) + [0] + Array("tail".utf8)
        try await harness.produce(bytes: push, headers: [KafkaHeader(name: "apns-id", value: nulId)])
        let acknowledged = try await harness.results(count: 2)
        #expect(acknowledged.contains { $0.rawHeaders == [KafkaHeader(name: "apns-id", value: apnsId), KafkaHeader(name: "traceparent", value: traceparent)] })
        let records = try await harness.readResultsTopic(count: 2)
        try await harness.shutdown()
        #expect(records.count == 2)
        let binary = try #require(records.first { $0.headers.contains { $0.name == "traceparent" } })
        #expect(binary.headers.first { $0.name == "apns-id" }?.value == apnsId)
        #expect(binary.headers.first { $0.name == "traceparent" }?.value == traceparent)
        let json = try JSONDecoder().decode([String: JSONValue].self, from: Data(binary.value ?? []))
        let source = try #require(json["source"])
        // Not UTF-8: the JSON messageId is the default id.
        #expect(json["messageId"]?.stringValue == "\(harness.configuration.inputTopics[0])-\(source["partition"]?.intValue ?? -1)-\(source["offset"]?.intValue ?? -1)")
        let withNul = try #require(records.first { !$0.headers.contains { $0.name == "traceparent" } })
        #expect(withNul.headers.first { $0.name == "apns-id" }?.value == nulId)
        let nulJSON = try JSONDecoder().decode([String: JSONValue].self, from: Data(withNul.value ?? []))
        #expect(nulJSON["messageId"]?.stringValue == "id\u{0}tail")
        #expect(runs.all.contains("ok:id\u{0}tail"))
    }

    @Test func aHugeApnsIdIsInvalidAndRecordsKeepFlowing() async throws {
        let runs = Runs()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(runs), partitions: 1)
        let huge = Array(repeating: UInt8(ascii: "h"), count: 1_200_000)
        try await Self.produce(harness, #"{"aps":{"content-available":1},"type":"ok"}"#, headers: [KafkaHeader(name: "apns-id", value: huge)], partition: 0)
        for index in 0..<3 {
            try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#, headers: ["apns-id": "after-\(index)"], partition: 0)
        }
        let results = try await harness.results(count: 4, timeout: .seconds(60))
        let records = try await harness.readResultsTopic(count: 4)
        try await harness.shutdown()
        let first = try #require(results.first { $0.offset == 0 })
        #expect(first.result == "failed")
        #expect(first.reason == "invalidPayload")
        #expect(first.detail?.contains("apns-id") == true && first.detail?.contains("1200000") == true && first.detail?.contains("256") == true,
                "\(first.detail ?? "-")")
        #expect(first.messageId == "\(harness.configuration.inputTopics[0])-0-0")
        #expect(Set(results.compactMap(\.messageId)).isSuperset(of: ["after-0", "after-1", "after-2"]))
        let firstRecord = try #require(records.first { ($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "").contains(#""offset":0"#) })
        #expect(!firstRecord.headers.contains { $0.name == "apns-id" }, "the oversized header is not copied")
        #expect(firstRecord.value?.count ?? 0 < 2000)
        #expect(!runs.all.contains { $0.hasPrefix("ok:hhh") })
    }

    /// Issue 8's first defect as filed, with dead letters on: the 1.2 MB apns-id makes the record
    /// failed/invalidPayload (the header is neither copied nor the message id), its byte-for-byte dead
    /// letter is too large for librdkafka and is replaced by a stub, and its offset and the later ones move on.
    @Test func aHugeApnsIdWithDeadLettersOnGetsAResultAStubAndItsOffsetCommitted() async throws {
        let runs = Runs()
        let dlt = DeadLetterTests.uniqueTopic()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(runs), partitions: 1) {
            $0.deadLetter = DeadLetterConfiguration(topic: dlt)
            $0.consumer["auto.commit.interval.ms"] = "200"
        }
        let huge = Array(repeating: UInt8(ascii: "h"), count: 1_200_000)
        try await Self.produce(harness, #"{"aps":{"content-available":1},"type":"ok"}"#, headers: [KafkaHeader(name: "apns-id", value: huge)], partition: 0)
        try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#, headers: ["apns-id": "after"], partition: 0)
        let results = try await harness.results(count: 2, timeout: .seconds(60))
        #expect(results.first { $0.offset == 0 }?.reason == "invalidPayload")
        #expect(results.first { $0.offset == 1 }?.messageId == "after")
        let committed = try await DeadLetterTests.committed(harness, reach: [0: 2])
        #expect(committed[0] == 2, "the offsets of the huge record and the next one are committed")
        let letters = try await harness.readTopic(dlt, count: 1, timeout: .seconds(10))
        let stub = try #require(letters.first)
        let headers = DeadLetterTests.headers(stub)
        #expect(headers["pushworker-source-offset"] == "0")
        #expect(headers["pushworker-reason"] == "invalidPayload")
        #expect(headers["pushworker-dropped-because"] == "MSG_SIZE_TOO_LARGE")
        #expect(!stub.headers.contains { $0.name == "apns-id" }, "the 1.2 MB header is dropped from the stub")
        try await harness.shutdown()
    }

    @Test func duplicateKeysAndDeepValuesGetTheirDocumentedResults() async throws {
        let runs = Runs()
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(runs))
        let deep = #"{"aps":{"content-available":1},"type":"ok","d":"# + String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000) + "}"
        let deepest = #"{"aps":{"content-available":1},"type":"ok","d":"# + String(repeating: "[", count: 999) + String(repeating: "]", count: 999) + "}"
        let inputs: [(String, String, String, String?, String?)] = [
            ("dup-type", #"{"aps":{"content-available":1},"type":"evil","type":"ok"}"#, "failed", "invalidPayload", #""type""#),
            ("dup-aps", #"{"aps":{"content-available":1},"aps":{"content-available":0},"type":"ok"}"#, "failed", "invalidPayload", #""aps""#),
            ("dup-flag", #"{"aps":{"content-available":0,"content-available":1},"type":"ok"}"#, "failed", "invalidPayload", #""content-available""#),
            ("nul-key", #"{"aps":{"content-available":1},"type\u0000x":"evil"}"#, "noData", "noWorker", nil),
            ("escaped-key", #"{"aps":{"content-available":1},"\u0074ype":"ok"}"#, "newData", nil, nil),
            ("deep", deep, "failed", "invalidPayload", "nesting limit is 1000"),
            ("deepest", deepest, "newData", nil, nil),
        ]
        for (id, value, _, _, _) in inputs { try await harness.produce(value, headers: ["apns-id": id]) }
        let results = try await harness.results(count: inputs.count)
        try await harness.shutdown()
        for (id, _, result, reason, detail) in inputs {
            let got = try #require(results.first { $0.messageId == id }, "\(id)")
            #expect(got.result == result, "\(id)")
            #expect(got.reason == reason, "\(id)")
            if let detail { #expect(got.detail?.contains(detail) == true, "\(id): \(got.detail ?? "-")") }
            #expect(got.detail?.contains("syntax error") != true, "\(id)")
        }
        #expect(runs.all.sorted() == ["ok:deepest", "ok:escaped-key"], "evil never ran")
    }

    @Test func anExecWorkerGivenAnApnsIdWithANulIsRefusedAndNeverRuns() async throws {
        let directory = NSTemporaryDirectory() + "pushworker-strings-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/worker.sh"
        try Data("#!/bin/sh\nprintf '%s\\n' \"$PUSHWORKER_MESSAGE_ID\" >> \"$1/ran\"\necho newData\n".utf8).write(to: URL(fileURLWithPath: script))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ExecWorker(arguments: [script, directory]), name: "exec:ok")
        let harness = try await PushWorkerTestHarness.start(registry: registry)
        let nulId: [UInt8] = Array("ok".utf8) + [0] + Array("evil".utf8)
        try await Self.produce(harness, #"{"aps":{"content-available":1},"type":"ok"}"#, headers: [KafkaHeader(name: "apns-id", value: nulId)])
        try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#, headers: ["apns-id": "plain"])
        let results = try await harness.results(count: 2)
        try await harness.shutdown()
        let refused = try #require(results.first { $0.messageId == "ok\u{0}evil" })
        #expect(refused.result == "failed")
        #expect(refused.reason == "invalidPayload")
        #expect(refused.detail?.contains("apns-id") == true && refused.detail?.contains("PUSHWORKER_MESSAGE_ID") == true, "\(refused.detail ?? "-")")
        #expect(results.first { $0.messageId == "plain" }?.result == "newData")
        let ran = (FileManager.default.contents(atPath: directory + "/ran")).map { String(decoding: $0, as: UTF8.self) }
        #expect(ran == "plain\n", "the program ran only for the plain record")
    }
}

/// The message ids a test's workers ran, as `type:messageId`.
private final class Runs: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ run: String) { list.withLock { $0.append(run) } }
    var all: [String] { list.withLock { $0 } }
}
