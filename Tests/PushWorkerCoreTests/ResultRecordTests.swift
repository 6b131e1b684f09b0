import Foundation
import Testing
@testable import PushWorkerCore

/// Contract section 3: the JSON value of a result record.
@Suite struct ResultRecordTests {
    /// 2026-11-30T10:16:48.123Z
    static let exampleMs: Int64 = 1_796_033_808_123

    static var rfc3339: Regex<Substring> { /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/ }

    func sample(startedAtMs: Int64? = exampleMs + 5, detail: String? = "exit status 3", type: String? = "content-update",
                reason: ResultReason? = "workerError", worker: String? = "exec:content-update", durationMs: Double = 12.5) -> ResultRecord {
        ResultRecord(
            messageId: "apns-123", type: type, result: .failed, reason: reason, detail: detail, worker: worker, attempt: 1,
            source: RecordSource(topic: "pushes", partition: 3, offset: 9_000_000_001),
            receivedAtMs: Self.exampleMs, startedAtMs: startedAtMs, finishedAtMs: Self.exampleMs + 1017, durationMs: durationMs,
            key: Array("device-1".utf8), apnsIdHeader: Array("apns-123".utf8),
            traceparentHeader: Array("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".utf8))
    }

    func parse(_ record: ResultRecord) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(record.jsonBytes()))
        return try #require(object as? [String: Any])
    }

    @Test func everyFieldWithItsType() throws {
        let record = sample()
        let object = try parse(record)
        let text = String(decoding: record.jsonBytes(), as: UTF8.self)

        #expect(object["messageId"] as? String == "apns-123")
        #expect(object["type"] as? String == "content-update")
        #expect(object["result"] as? String == "failed")
        #expect(object["reason"] as? String == "workerError")
        #expect(object["detail"] as? String == "exit status 3")
        #expect(object["worker"] as? String == "exec:content-update")
        #expect((object["attempt"] as? NSNumber)?.intValue == 1)
        #expect(text.contains(#""attempt":1,"#))
        let source = try #require(object["source"] as? [String: Any])
        #expect(source["topic"] as? String == "pushes")
        #expect((source["partition"] as? NSNumber)?.intValue == 3)
        #expect((source["offset"] as? NSNumber)?.int64Value == 9_000_000_001)
        #expect(Set(source.keys) == ["topic", "partition", "offset"])
        #expect(text.contains(#""source":{"topic":"pushes","partition":3,"offset":9000000001}"#))
        #expect(object["receivedAt"] as? String == "2026-11-30T10:16:48.123Z")
        #expect(object["startedAt"] as? String == "2026-11-30T10:16:48.128Z")
        #expect(object["finishedAt"] as? String == "2026-11-30T10:16:49.140Z")
        for field in ["receivedAt", "startedAt", "finishedAt"] {
            let value = try #require(object[field] as? String)
            #expect(value.wholeMatch(of: Self.rfc3339) != nil, "\(field) = \(value)")
        }
        #expect((object["durationMs"] as? NSNumber)?.doubleValue == 12.5)
        #expect(text.contains(#""durationMs":12.5}"#))
        // The key and traceparent go on the Kafka record, not into the value.
        #expect(object["key"] == nil)
        #expect(object["traceparent"] == nil)
        #expect(Set(object.keys) == [
            "messageId", "type", "result", "reason", "detail", "worker", "attempt", "willRetry", "source",
            "receivedAt", "startedAt", "finishedAt", "durationMs",
        ])
    }

    @Test func keysInContractOrder() throws {
        let text = String(decoding: sample().jsonBytes(), as: UTF8.self)
        let keys = text.matches(of: /"([A-Za-z]+)":/).map { String($0.output.1) }
        #expect(keys == [
            "messageId", "type", "result", "reason", "detail", "worker", "attempt", "willRetry",
            "source", "topic", "partition", "offset",
            "receivedAt", "startedAt", "finishedAt", "durationMs",
        ])
    }

    @Test func recordThatDidNotRun() throws {
        let record = ResultRecord(
            messageId: "pushes-0-42", type: nil, result: .failed, reason: "invalidPayload", detail: nil, worker: nil,
            source: RecordSource(topic: "pushes", partition: 0, offset: 42),
            receivedAtMs: Self.exampleMs, startedAtMs: nil, finishedAtMs: Self.exampleMs, durationMs: 0)
        let object = try parse(record)
        let text = String(decoding: record.jsonBytes(), as: UTF8.self)
        for field in ["type", "detail", "worker", "startedAt"] {
            #expect(object[field] is NSNull, "\(field) should be null")
            #expect(text.contains(#""\#(field)":null"#))
        }
        #expect(object["receivedAt"] as? String == "2026-11-30T10:16:48.123Z")
        #expect(object["finishedAt"] as? String == "2026-11-30T10:16:48.123Z")
        #expect((object["durationMs"] as? NSNumber)?.doubleValue == 0)
        #expect(text.hasSuffix(#""durationMs":0}"#))
        #expect((object["attempt"] as? NSNumber)?.intValue == 1)
    }

    @Test func nullReason() throws {
        let record = sample(reason: nil)
        let object = try parse(record)
        #expect(object["reason"] is NSNull)
        #expect(object["result"] as? String == "failed")
    }

    @Test("result values", arguments: [BackgroundFetchResult.newData, .noData, .failed])
    func resultValues(_ result: BackgroundFetchResult) throws {
        var record = sample()
        record.result = result
        let object = try parse(record)
        #expect(object["result"] as? String == ["newData", "noData", "failed"][BackgroundFetchResult.allCases.firstIndex(of: result)!])
    }

    @Test func workerDefinedReason() throws {
        let object = try parse(sample(reason: "unchanged"))
        #expect(object["reason"] as? String == "unchanged")
    }

    @Test func escapingInStrings() throws {
        let detail = "He said \"no\"\nthen \\left\ttab\r\u{01}\u{1F}\u{7F} ü 🚀 </script>"
        let record = sample(detail: detail, type: "ty\"pe", worker: "line1\nline2")
        let bytes = record.jsonBytes()
        // No raw control characters (U+0000–U+001F) anywhere in the value.
        #expect(!bytes.contains { $0 < 0x20 })
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#"He said \"no\"\nthen \\left\ttab\r\u0001\u001f"#))
        let object = try parse(record)
        #expect(object["detail"] as? String == detail)
        #expect(object["type"] as? String == "ty\"pe")
        #expect(object["worker"] as? String == "line1\nline2")
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let detail = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) }))
        let record = sample(detail: detail)
        #expect(!record.jsonBytes().contains { $0 < 0x20 })
        #expect(try parse(record)["detail"] as? String == detail)
    }

    @Test func aNulIsWrittenAsAnEscapeAndKeepsTheRestOfTheString() throws {
        var record = sample(detail: "d\u{0}etail", type: "ok\u{0}evil")
        record.messageId = "id\u{0}tail"
        let text = String(decoding: record.jsonBytes(), as: UTF8.self)
        #expect(text.contains(#""messageId":"id\u0000tail""#))
        #expect(text.contains(#""type":"ok\u0000evil""#))
        #expect(text.contains(#""detail":"d\u0000etail""#))
        #expect(!record.jsonBytes().contains(0))
        #expect(try parse(record)["type"] as? String == "ok\u{0}evil")
    }

    @Test func headerBytesAreNotPartOfTheValue() {
        var record = sample()
        record.apnsIdHeader = [0xFF, 0xFE]
        record.traceparentHeader = [0xFF, 0xFE, 0xFD]
        #expect(record.jsonBytes() == sample().jsonBytes())
        #expect(record.hasApnsId)
        #expect(record.traceparent == nil, "not UTF-8: no text form")
        record.apnsIdHeader = nil
        #expect(!record.hasApnsId)
    }

    @Test func messageIdAndTopicAreEscaped() throws {
        var record = sample()
        record.messageId = "a\"b\\c"
        record.source.topic = "to\"pic"
        let object = try parse(record)
        #expect(object["messageId"] as? String == "a\"b\\c")
        #expect((object["source"] as? [String: Any])?["topic"] as? String == "to\"pic")
    }

    @Test("durationMs is a number with up to microsecond precision", arguments: [
        (0.0, "0"), (12.0, "12"), (12.5, "12.5"), (0.001, "0.001"), (1.23456, "1.235"), (30000, "30000"), (-3, "0"), (.nan, "0"),
    ])
    func durationFormat(_ ms: Double, _ expected: String) throws {
        let record = sample(durationMs: ms)
        let text = String(decoding: record.jsonBytes(), as: UTF8.self)
        #expect(text.hasSuffix(#""durationMs":\#(expected)}"#))
        let object = try parse(record)
        #expect((object["durationMs"] as? NSNumber)?.doubleValue == Double(expected))
    }

    @Test("RFC 3339 UTC timestamps with milliseconds", arguments: [
        (Int64(1_796_033_808_123), "2026-11-30T10:16:48.123Z"),
        (1_796_033_808_000, "2026-11-30T10:16:48.000Z"),
        (1_796_033_808_005, "2026-11-30T10:16:48.005Z"),
        (951_868_799_999, "2000-02-29T23:59:59.999Z"),
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-1000, "1969-12-31T23:59:59.000Z"),
    ])
    func timestamps(_ ms: Int64, _ expected: String) throws {
        #expect(WallClock.rfc3339(ms: ms) == expected)
        let record = ResultRecord(
            messageId: "m", type: nil, result: .newData, reason: nil, detail: nil, worker: "w",
            source: RecordSource(topic: "t", partition: 0, offset: 0),
            receivedAtMs: ms, startedAtMs: ms, finishedAtMs: ms, durationMs: 0)
        let object = try parse(record)
        #expect(object["receivedAt"] as? String == expected)
        #expect(object["startedAt"] as? String == expected)
        #expect(object["finishedAt"] as? String == expected)
    }

    /// The lock-free calendar arithmetic agrees with glibc's `gmtime_r` (the oracle) over four centuries of
    /// days (leap days, the 1900/2100 rules, 2000's exception) and every time of day's boundaries.
    @Test func timestampsAgreeWithGmtimeOverFourCenturies() {
        var mismatches: [String] = []
        // Every 7th day from 1900 to 2300, at a different second of the day each time.
        let firstDay: Int64 = -25_567, lastDay: Int64 = 120_529
        for (index, day) in stride(from: firstDay, through: lastDay, by: 7).enumerated() {
            let ms = (day * 86_400 + Int64(index * 7919 % 86_400)) * 1000 + Int64(index % 1000)
            var seconds = time_t(ms / 1000 - (ms % 1000 < 0 ? 1 : 0))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                                  Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int((ms % 1000 + 1000) % 1000))
            let written = WallClock.rfc3339(ms: ms)
            if written != expected, mismatches.count < 5 { mismatches.append("\(ms): \(written) != \(expected)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        // The last millisecond of each day of a leap February and the turn of a century.
        #expect(WallClock.rfc3339(ms: 4_107_542_399_999) == "2100-02-28T23:59:59.999Z")
        #expect(WallClock.rfc3339(ms: 4_107_542_400_000) == "2100-03-01T00:00:00.000Z")
        #expect(WallClock.rfc3339(ms: -2_203_891_200_001) == "1900-02-28T23:59:59.999Z")
    }

    @Test func nowFormatsAsRFC3339() {
        let text = WallClock.rfc3339(ms: WallClock.nowMs())
        #expect(text.wholeMatch(of: Self.rfc3339) != nil)
        #expect(text.hasPrefix("20"))
    }

    @Test func validUTF8() {
        let record = sample(detail: "Grüße 🚀")
        #expect(String(validating: record.jsonBytes(), as: UTF8.self) != nil)
    }
}
