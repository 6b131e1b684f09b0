import Foundation
import Testing
@testable import PushWorkerCore

/// Issue 8: strings keep all their bytes, keys compare exactly, duplicated envelope keys are refused, and
/// deep valid JSON is accepted up to the documented nesting limit. Only the public
/// `validate(value:apnsExpiration:nowMs:)` is used, so these cases run against any version of the validator.
@Suite struct PayloadEnvelopeTests {
    let validator = PayloadValidator()

    func verdict(_ text: String) -> PayloadValidator.Verdict {
        validator.validate(value: Array(text.utf8), apnsExpiration: nil, nowMs: WallClock.nowMs())
    }

    func verdict(_ bytes: [UInt8]) -> PayloadValidator.Verdict {
        validator.validate(value: bytes, apnsExpiration: nil, nowMs: WallClock.nowMs())
    }

    /// The detail of a `failed` / `invalidPayload` verdict, or nil (recording an issue) for anything else.
    func invalidDetail(_ verdict: PayloadValidator.Verdict, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        guard case .rejected(.failed, let reason, let detail) = verdict, reason == .invalidPayload else {
            Issue.record("expected failed/invalidPayload, got \(verdict)", sourceLocation: sourceLocation)
            return nil
        }
        return detail
    }

    // MARK: strings and keys keep all their bytes (defect 2)

    @Test func aNulEscapeDoesNotCutTheType() {
        #expect(verdict(#"{"aps":{"content-available":1},"type":"ok\u0000evil"}"#) == .accepted(type: "ok\u{0}evil"))
        #expect(verdict(#"{"aps":{"content-available":1},"type":"\u0000"}"#) == .accepted(type: "\u{0}"))
        #expect(verdict(#"{"aps":{"content-available":1},"type":"ok\u0000"}"#) == .accepted(type: "ok\u{0}"))
    }

    @Test func aKeyWithANulIsNotType() {
        #expect(verdict(#"{"aps":{"content-available":1},"type\u0000x":"evil"}"#) == .accepted(type: nil))
        #expect(verdict(#"{"aps":{"content-available":1},"type\u0000x":"evil","type":"ok"}"#) == .accepted(type: "ok"))
    }

    @Test func aKeyWithANulIsNotApsOrContentAvailable() {
        guard case .rejected(.noData, let reason, _) = verdict(#"{"aps\u0000":{"content-available":1},"type":"ok"}"#) else {
            Issue.record("aps\\u0000 was read as aps"); return
        }
        #expect(reason == .notSilent)
        guard case .rejected(.noData, let inner, _) = verdict(#"{"aps":{"content-available\u0000":1},"type":"ok"}"#) else {
            Issue.record("content-available\\u0000 was read as content-available"); return
        }
        #expect(inner == .notSilent)
    }

    @Test("keys written with escapes are the keys they spell", arguments: [
        #"{"aps":{"content-available":1},"\u0074ype":"content-update"}"#,
        #"{"\u0061ps":{"content-available":1},"type":"content-update"}"#,
        #"{"aps":{"content\u002davailable":1},"t\u0079pe":"content-update"}"#,
        #"{"a\u0070s":{"\u0063ontent-available":1},"typ\u0065":"content\u002dupdate"}"#,
        #"{"aps":{"content-available":1},"type":"content\u002dupdate"}"#,
    ])
    func escapedKeys(_ text: String) {
        #expect(verdict(text) == .accepted(type: "content-update"))
    }

    @Test func escapesInTheTypeAreDecodedExactly() {
        // A surrogate pair is one code point.
        #expect(verdict(#"{"aps":{"content-available":1},"type":"\ud83d\ude80"}"#) == .accepted(type: "🚀"))
        #expect(verdict(#"{"aps":{"content-available":1},"type":"a\uD834\uDD1Eb"}"#) == .accepted(type: "a𝄞b"))
        // An escaped backslash followed by u0000 is six characters, not a NUL.
        #expect(verdict(#"{"aps":{"content-available":1},"type":"ok\\u0000"}"#) == .accepted(type: #"ok\u0000"#))
        #expect(verdict(#"{"aps":{"content-available":1},"type":"q\"\\\/\b\f\n\r\t"}"#) == .accepted(type: "q\"\\/\u{8}\u{c}\n\r\t"))
        #expect(verdict(#"{"aps":{"content-available":1},"type":"\u00e9\u20AC"}"#) == .accepted(type: "é€"))
    }

    @Test func contentAvailableStaysTheNumberOne() {
        for one in ["1", "1.0", "1e0", "10e-1", "1E+0"] {
            #expect(verdict(#"{"aps":{"content-available":\#(one)},"type":"ok"}"#) == .accepted(type: "ok"), "\(one)")
        }
        for notOne in [#""1""#, "true", "false", "null", "0", "2", "-1", "1.5", "[1]", #"{"x":1}"#, #""1\u0000""#] {
            guard case .rejected(.noData, let reason, let detail) = verdict(#"{"aps":{"content-available":\#(notOne)},"type":"ok"}"#) else {
                Issue.record("\(notOne) counted as 1"); continue
            }
            #expect(reason == .notSilent)
            #expect(detail.contains("content-available"))
        }
    }

    @Test func detailsDescribeTheFlag() {
        guard case .rejected(_, _, let detail) = verdict(#"{"aps":{"content-available":2.5},"type":"ok"}"#) else { Issue.record("accepted"); return }
        #expect(detail == "aps.content-available is 2.5; it must be the integer 1")
        guard case .rejected(_, _, let string) = verdict(#"{"aps":{"content-available":"1"},"type":"ok"}"#) else { Issue.record("accepted"); return }
        #expect(string == #"aps.content-available is the string "1"; it must be the integer 1"#)
        guard case .rejected(_, _, let yes) = verdict(#"{"aps":{"content-available":true},"type":"ok"}"#) else { Issue.record("accepted"); return }
        #expect(yes == "aps.content-available is true; it must be the integer 1")
    }

    @Test func otherValuesAreSkippedWhateverTheyHold() {
        let text = #"{"data":{"type":"x","aps":[1,{"aps":"}"}],"s":"\"}]\\"},"aps":{"n":[{"content-available":0}],"content-available":1},"list":["type"],"type":"ok"}"#
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil)
        #expect(verdict(text) == .accepted(type: "ok"))
    }

    @Test("a \\u escape without four hex digits is not JSON, wherever it is (cJSON reads it as a NUL)", arguments: [
        #"{"aps":{"content-available":1},"type":"ok","data":"ok\u0[000evil"}"#,
        #"{"aps":{"content-available":1},"type":"ok","data":"\ud3d\ude80"}"#,
        #"{"aps":{"content-available":1},"type":"ok","da\u00-0ta":1}"#,
        #"{"aps":{"content-available":1},"type":"ok","data":"\u"}"#,
        #"{"aps":{"content-available":1},"type":"ok","data":"\u12"}"#,
        #"{"aps":{"content-available":1},"type":"o\uk000"}"#,
    ])
    func malformedUnicodeEscapes(_ text: String) throws {
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) == nil)
        let detail = try #require(invalidDetail(verdict(text)))
        #expect(detail.contains("not valid JSON"), "\(detail)")
    }

    // MARK: duplicate keys (defect 5)

    @Test("a duplicated aps, type or content-available is invalidPayload naming the key", arguments: [
        (#"{"aps":{"content-available":1},"type":"evil","type":"ok"}"#, "type"),
        (#"{"type":"evil","aps":{"content-available":1},"type":"evil"}"#, "type"),
        (#"{"aps":{"content-available":1},"type":"ok","\u0074ype":"evil"}"#, "type"),
        (#"{"aps":{"content-available":1},"type":1,"type":"ok"}"#, "type"),
        (#"{"aps":{"content-available":1},"type":"ok","aps":{"content-available":1}}"#, "aps"),
        (#"{"aps":{"content-available":0},"aps":{"content-available":1},"type":"ok"}"#, "aps"),
        (#"{"aps":"x","type":"ok","\u0061ps":1}"#, "aps"),
        (#"{"aps":{"content-available":1,"content-available":1},"type":"ok"}"#, "content-available"),
        (#"{"aps":{"content-available":0,"alert":"a","content\u002davailable":1},"type":"ok"}"#, "content-available"),
    ])
    func duplicateKeys(_ text: String, _ key: String) {
        // Foundation reads these as JSON: they are valid syntax, refused for their meaning.
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil)
        guard let detail = invalidDetail(verdict(text)) else { return }
        #expect(detail.contains("\"\(key)\""), "\(detail)")
        #expect(detail.contains("more than once"), "\(detail)")
    }

    @Test("the same names elsewhere are not duplicates", arguments: [
        #"{"aps":{"content-available":1},"type":"ok","data":{"type":"a","type":"b","aps":1,"aps":2}}"#,
        #"{"aps":{"content-available":1,"x":{"content-available":1}},"content-available":1,"type":"ok"}"#,
        #"{"aps":{"content-available":1},"type":"ok","type\u0000":"evil","Type":"x"}"#,
        #"{"aps":{"content-available":1},"type":"ok","list":[{"type":"a"},{"type":"b"}]}"#,
    ])
    func notDuplicates(_ text: String) {
        #expect(verdict(text) == .accepted(type: "ok"))
    }

    // MARK: nesting (defect 4)

    /// `{"aps":…,"type":"ok","d":` + `arrays` nested arrays + `}`: nesting depth `arrays + 1`.
    static func nested(arrays: Int, open: String = "[", close: String = "]") -> [UInt8] {
        Array((#"{"aps":{"content-available":1},"type":"ok","d":"# + String(repeating: open, count: arrays)
            + String(repeating: close, count: arrays) + "}").utf8)
    }

    @Test func theNestingLimitIsCJSONs1000() {
        #expect(PayloadValidator.maxNestingDepth == 1000)
    }

    @Test func exactlyTheNestingLimitIsAccepted() {
        // The object is level 1: 999 arrays inside it reach level 1000.
        #expect(verdict(Self.nested(arrays: 999)) == .accepted(type: "ok"))
        // Objects count as arrays do (a larger size limit makes room for their keys).
        func objects(_ count: Int) -> [UInt8] {
            Array((#"{"aps":{"content-available":1},"type":"ok","d":"# + String(repeating: #"{"a":"#, count: count) + "1"
                + String(repeating: "}", count: count) + "}").utf8)
        }
        let roomy = PayloadValidator(maxPayloadBytes: 65_536)
        #expect(roomy.validate(value: objects(999), apnsExpiration: nil, nowMs: WallClock.nowMs()) == .accepted(type: "ok"))
        #expect(invalidDetail(roomy.validate(value: objects(1000), apnsExpiration: nil, nowMs: WallClock.nowMs()))?.contains("nesting limit is 1000") == true)
    }

    @Test func oneLevelOverTheLimitNamesTheLimit() throws {
        let detail = try #require(invalidDetail(verdict(Self.nested(arrays: 1000))))
        #expect(detail.contains("1000"), "\(detail)")
        #expect(detail.contains("nesting limit"), "\(detail)")
        #expect(!detail.contains("syntax error"), "\(detail)")
    }

    @Test func twoThousandNestedArraysAreTooDeepNotASyntaxError() throws {
        let value = Self.nested(arrays: 2000)
        #expect(value.count == 4048)
        let detail = try #require(invalidDetail(verdict(value)))
        #expect(detail.contains("nesting limit is 1000"), "\(detail)")
        #expect(!detail.contains("syntax error"), "\(detail)")
    }

    @Test func bracketsInsideStringsDoNotNest() {
        let value = Array((#"{"aps":{"content-available":1},"type":"ok","s":""# + String(repeating: "[{", count: 1500) + #""}"#).utf8)
        #expect(verdict(value) == .accepted(type: "ok"))
    }

    @Test func syntaxErrorsAreStillSyntaxErrors() throws {
        let detail = try #require(invalidDetail(verdict(#"{"aps":{"content-available":1},"type":"ok","d":[[1,]]}"#)))
        #expect(detail.contains("not valid JSON"), "\(detail)")
    }
}
