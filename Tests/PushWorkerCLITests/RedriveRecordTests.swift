import Foundation
@testable import PushWorkerCLI
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import Testing

/// What `pushworker redrive` sends back for a dead letter, and the line `--dry-run` prints for it.
@Suite struct RedriveRecordTests {
    static func flat(_ headers: [KafkaHeader]) -> [String] {
        headers.map { "\($0.name)=\($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "<null>")" }
    }

    /// A dead letter as ``DeadLetterRecord`` writes it, read back from the dead-letter topic.
    static func letter(key: [UInt8]?, value: [UInt8]?, attempt: Int = 2, detail: String? = "exit status 3") -> KafkaRecord {
        let input = InputRecord(source: RecordSource(topic: "pushes-b", partition: 1, offset: 17), key: key, value: value,
                                headers: [("x-trace", Array("abc".utf8)), ("apns-id", Array("m-1".utf8))], receivedAtMs: 0)
        let result = ResultRecord(messageId: "m-1", type: "t", result: .failed, reason: .workerError, detail: detail, worker: "exec:t",
                                  attempt: attempt, source: input.source, receivedAtMs: 0, startedAtMs: 0,
                                  finishedAtMs: 1_767_225_600_123, durationMs: 1)
        let outgoing = DeadLetterRecord.make(for: input, result: result, topic: "dead")
        return KafkaRecord(topicPartition: TopicPartition(topic: "dead", partition: 3), offset: 99, key: outgoing.key,
                           value: outgoing.value, headers: outgoing.headers)
    }

    @Test func theRecordSentBackIsTheInputWithItsAttempts() throws {
        let letter = Self.letter(key: Array("device-1".utf8), value: Array(#"{"a":1}"#.utf8))
        let back = try #require(RedriveCommand.redriven(letter, to: nil))
        #expect(back.topic == "pushes-b")
        #expect(back.partition == nil, "partitioned by key, like the original")
        #expect(back.key == Array("device-1".utf8))
        #expect(back.value == Array(#"{"a":1}"#.utf8))
        #expect(Self.flat(back.headers) == ["x-trace=abc", "apns-id=m-1", "pushworker-attempts=2"])
        #expect(RedriveCommand.redriven(letter, to: "elsewhere")?.topic == "elsewhere")
        // Without a source-topic header (not written by pushworker) only --to says where.
        var foreign = letter
        foreign.headers.removeAll { $0.name == "pushworker-source-topic" }
        #expect(RedriveCommand.redriven(foreign, to: nil) == nil)
        #expect(RedriveCommand.redriven(foreign, to: "elsewhere")?.topic == "elsewhere")
        // A null value stays null.
        #expect(try #require(RedriveCommand.redriven(Self.letter(key: nil, value: nil), to: nil)).value == nil)
    }

    @Test func dryRunLinesAreJSONWithNumbersAndReadableBytes() throws {
        func object(_ record: KafkaRecord) throws -> [String: Any] {
            let line = RedriveCommand.describe(record)
            #expect(!line.contains("\n"), "one line")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let text = try object(Self.letter(key: Array("device-1".utf8), value: Array(#"{"a":"é/x"}"#.utf8)))
        let deadLetter = try #require(text["deadLetter"] as? [String: Any])
        #expect(deadLetter["topic"] as? String == "dead")
        #expect(deadLetter["partition"] as? Int == 3)
        #expect(deadLetter["offset"] as? Int == 99)
        let source = try #require(text["source"] as? [String: Any])
        #expect(source["topic"] as? String == "pushes-b")
        #expect(source["partition"] as? Int == 1)
        #expect(source["offset"] as? Int == 17)
        #expect(text["attempts"] as? Int == 2)
        #expect(text["messageId"] as? String == "m-1")
        #expect(text["reason"] as? String == "workerError")
        #expect(text["detail"] as? String == "exit status 3")
        #expect(text["worker"] as? String == "exec:t")
        #expect(text["failedAt"] as? String == "2026-01-01T00:00:00.123Z")
        #expect(text["key"] as? String == "device-1")
        #expect(text["value"] as? String == #"{"a":"é/x"}"#)

        let binary = try object(Self.letter(key: [0xFF, 0x00], value: [0xC3, 0x28], detail: nil))
        #expect(binary["key"] as? String == "base64:" + Data([0xFF, 0x00]).base64EncodedString())
        #expect(binary["value"] as? String == "base64:" + Data([0xC3, 0x28]).base64EncodedString())
        #expect(binary["detail"] is NSNull)

        let null = try object(Self.letter(key: nil, value: nil))
        #expect(null["key"] is NSNull)
        #expect(null["value"] is NSNull)
    }
}
