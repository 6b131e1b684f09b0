import Foundation
import Testing
@testable import PushWorkerCore

/// Contract section 2, rows 1–4, through `PayloadValidator.validate(value:apnsExpiration:nowMs:)`.
@Suite struct PayloadValidatorTests {
    let validator = PayloadValidator()

    @Test("contract section 2 rows 1–4", arguments: ValidationCase.all)
    func row(_ testCase: ValidationCase) {
        let verdict = validator.validate(value: testCase.value, apnsExpiration: testCase.expiration, nowMs: WallClock.nowMs())
        switch (testCase.expected, verdict) {
        case (.accepted(let type), .accepted(let actualType)):
            #expect(actualType == type)
        case (.rejected(let result, let reason), .rejected(let actualResult, let actualReason, let detail)):
            #expect(actualResult.rawValue == result)
            #expect(actualReason.rawValue == reason)
            #expect(!detail.isEmpty)
        default:
            Issue.record("expected \(testCase.expected), got \(verdict)")
        }
    }

    @Test func sizeIsCheckedBeforeParsing() throws {
        let value = ValidationCase.tooLargeAndInvalidJSON
        // The same bytes under a larger limit are rejected as invalid JSON: the 4097-byte verdict comes from the size check.
        let larger = PayloadValidator(maxPayloadBytes: 8192)
        guard case .rejected(_, let reason, _) = larger.validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("expected a rejection"); return
        }
        #expect(reason.rawValue == "invalidPayload")
        guard case .rejected(.failed, let sizeReason, let detail) = validator.validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("expected a rejection"); return
        }
        #expect(sizeReason.rawValue == "payloadTooLarge")
        #expect(detail.contains("4097"))
        #expect(detail.contains("4096"))
    }

    @Test func defaultLimitIs4096Bytes() {
        #expect(PayloadValidator().maxPayloadBytes == 4096)
        #expect(PayloadValidator().validate(value: Payload.silent(ofSize: 4096), apnsExpiration: nil, nowMs: WallClock.nowMs())
            == .accepted(type: "content-update"))
    }

    @Test func configuredLimit() {
        let small = PayloadValidator(maxPayloadBytes: 100)
        #expect(small.validate(value: Payload.silent(ofSize: 100), apnsExpiration: nil, nowMs: WallClock.nowMs()) == .accepted(type: "content-update"))
        guard case .rejected(.failed, let reason, _) = small.validate(value: Payload.silent(ofSize: 101), apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("expected payloadTooLarge"); return
        }
        #expect(reason.rawValue == "payloadTooLarge")
    }

    @Test func expirationIsComparedWithTheGivenTime() {
        let value = Payload.silent()
        let expiresAt: Int64 = 1_796_033_808 // seconds
        // One millisecond before the expiration: still valid; at and after it: expired.
        #expect(validator.validate(value: value, apnsExpiration: String(expiresAt), nowMs: expiresAt * 1000 - 1) == .accepted(type: "content-update"))
        for now in [expiresAt * 1000, expiresAt * 1000 + 1, expiresAt * 1000 + 86_400_000] {
            guard case .rejected(.noData, let reason, let detail) = validator.validate(value: value, apnsExpiration: String(expiresAt), nowMs: now) else {
                Issue.record("expected expired at \(now)"); continue
            }
            #expect(reason.rawValue == "expired")
            #expect(!detail.isEmpty)
        }
        // 0 never expires, whatever the time.
        #expect(validator.validate(value: value, apnsExpiration: "0", nowMs: Int64.max / 2) == .accepted(type: "content-update"))
    }

    @Test("type: string, missing or not a string", arguments: [
        (#"{"aps":{"content-available":1},"type":"content-update"}"#, "content-update" as String?),
        (#"{"aps":{"content-available":1},"type":"other"}"#, "other"),
        (#"{"aps":{"content-available":1}}"#, nil),
        (#"{"aps":{"content-available":1},"type":42}"#, nil),
        (#"{"aps":{"content-available":1},"type":null}"#, nil),
        (#"{"aps":{"content-available":1},"type":{"name":"x"}}"#, nil),
        (#"{"aps":{"content-available":1},"type":["x"]}"#, nil),
        (#"{"aps":{"content-available":1},"Type":"content-update"}"#, nil),
    ])
    func type(_ json: String, _ expected: String?) {
        #expect(validator.validate(value: Array(json.utf8), apnsExpiration: nil, nowMs: WallClock.nowMs()) == .accepted(type: expected))
    }

    @Test func notSilentDetailNamesTheProblem() {
        guard case .rejected(_, _, let detail) = validator.validate(
            value: Array(#"{"aps":{"content-available":"1"}}"#.utf8), apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("expected a rejection"); return
        }
        #expect(detail.contains("content-available"))
    }

    // cJSON alone accepts text that is not JSON (RFC 8259); the validator must still reject it (row 2).

    @Test("text cJSON accepts but RFC 8259 does not", arguments: [
        "{\"aps\":{\"content-available\":1},\"type\":\"content-update\",\"title\":\"a\nb\"}",
        "{\"aps\":{\"content-available\":1},\"type\":\"content-update\",\"title\":\"tab\there\"}",
        "{\"aps\":{\"content-available\":1},\"type\":\"content-update\",\"x\u{01}\":1}",
        #"{"aps":{"content-available":01},"type":"content-update"}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":-01}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":[0,00]}"#,
    ])
    func nonJSONThatCJSONAccepts(_ text: String) {
        let value = Array(text.utf8)
        // Foundation agrees that this is not JSON.
        #expect((try? JSONSerialization.jsonObject(with: Data(value))) == nil)
        guard case .rejected(.failed, let reason, let detail) = validator.validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("accepted a value that is not JSON"); return
        }
        #expect(reason.rawValue == "invalidPayload")
        #expect(!detail.isEmpty)
    }

    @Test("more text cJSON accepts but RFC 8259 does not", arguments: [
        [0x7B, 0x0B] + Array(#""aps":{"content-available":1},"type":"content-update"}"#.utf8),   // vertical tab as whitespace
        [0x7B, 0x01] + Array(#""aps":{"content-available":1},"type":"content-update"}"#.utf8),   // U+0001 as whitespace
        [0x00, 0x7B] + Array(#""aps":{"content-available":1},"type":"content-update"}"#.utf8),   // NUL before the object
        Array(#"{"aps":{"content-available":1.},"type":"content-update"}"#.utf8),                  // trailing dot
        Array(#"{"aps":{"content-available":1},"type":"content-update","n":-.5}"#.utf8),          // no integer part
    ] as [[UInt8]])
    func moreNonJSONThatCJSONAccepts(_ value: [UInt8]) {
        #expect((try? JSONSerialization.jsonObject(with: Data(value))) == nil)
        guard case .rejected(.failed, let reason, _) = validator.validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) else {
            Issue.record("accepted a value that is not JSON"); return
        }
        #expect(reason.rawValue == "invalidPayload")
    }

    @Test("strict checks keep valid JSON valid", arguments: [
        #"{"aps":{"content-available":1},"type":"content-update","n":0}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":-0}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":0.05}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":10.01}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":1e05}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":1E-05}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":2.5e+007}"#,
        #"{"aps":{"content-available":1},"type":"content-update","n":[0,0,100]}"#,
        #"{"aps":{"content-available":1},"type":"content-update","s":"01 \"02\" \\03 \u0001"}"#,
        #"{"aps":{"content-available":1},"type":"content-update","01":"x"}"#,
    ])
    func validJSONStaysValid(_ text: String) {
        let value = Array(text.utf8)
        #expect((try? JSONSerialization.jsonObject(with: Data(value))) != nil)
        #expect(validator.validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) == .accepted(type: "content-update"))
    }
}

/// Header values at the edges of `Int64` must not trap (a trap would crash the service on every restart).
@Suite struct ExpirationOverflowTests {
    @Test("huge apns-expiration values are in the far future", arguments: ["9223372036854775807", "9223372036854776", "99999999999999"])
    func hugeExpirationIsAccepted(_ header: String) {
        let value = Array(#"{"aps":{"content-available":1},"type":"content-update"}"#.utf8)
        #expect(PayloadValidator().validate(value: value, apnsExpiration: header, nowMs: WallClock.nowMs()) == .accepted(type: "content-update"))
    }

    @Test func tooLargeForInt64IsNotUnixSeconds() {
        let value = Array(#"{"aps":{"content-available":1},"type":"content-update"}"#.utf8)
        guard case .rejected(.failed, let reason, _) = PayloadValidator().validate(value: value, apnsExpiration: "92233720368547758070", nowMs: WallClock.nowMs()) else {
            Issue.record("accepted an apns-expiration that is not UNIX seconds"); return
        }
        #expect(reason == .invalidPayload)
    }
}
