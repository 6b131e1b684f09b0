import Foundation
import Testing
@testable import PushWorkerCore

/// `Job.object` at every nesting the validator accepts, and `JSONValue.parse` agreeing with `JSONDecoder`.
@Suite struct JSONValueParseTests {
    /// A push whose key `d` holds `arrays` nested arrays around the number 7 (nesting `arrays + 1`).
    static func deep(_ arrays: Int) -> [UInt8] {
        Array((#"{"aps":{"content-available":1},"type":"ok","d":"# + String(repeating: "[", count: arrays) + "7"
            + String(repeating: "]", count: arrays) + "}").utf8)
    }

    /// How many arrays are nested around the innermost value, and that value.
    static func unwrap(_ value: JSONValue?) -> (Int, JSONValue?) {
        var depth = 0
        var current = value
        while case .array(let items)? = current, items.count == 1 {
            depth += 1
            current = items[0]
        }
        return (depth, current)
    }

    @Test func jobObjectReadsPayloadsDeeperThanFoundationDoes() throws {
        let value = Self.deep(999)
        #expect(PayloadValidator().validate(value: value, apnsExpiration: nil, nowMs: WallClock.nowMs()) == .accepted(type: "ok"))
        // Foundation's decoder gives up at 512 levels.
        #expect((try? JSONDecoder().decode([String: JSONValue].self, from: Data(value))) == nil)
        let object = makeJob(type: "ok", value: value).object
        #expect(object["type"] == .string("ok"))
        let (depth, innermost) = Self.unwrap(object["d"])
        #expect(depth == 999)
        #expect(innermost == .int(7))
    }

    @Test func stringsKeepTheirNul() {
        let object = makeJob(value: Payload.silent(extra: #","s":"a\u0000b","k\u0000":1"#)).object
        #expect(object["s"] == .string("a\u{0}b"))
        #expect(object["k\u{0}"] == .int(1))
        #expect(JSONValue.parse(Array(#"{"s":"a\u0000b","k\u0000":1}"#.utf8)) == .object(["s": .string("a\u{0}b"), "k\u{0}": .int(1)]))
    }

    @Test("parse agrees with JSONDecoder", arguments: [
        #"{"aps":{"content-available":1},"type":"content-update","n":[1,1.0,1e2,1.5,-0,-12,0.25,1E-2,9223372036854775807,-9223372036854775808,12345678901234567890]}"#,
        #"{"s":"q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude80","e":"","t":true,"f":false,"z":null}"#,
        #" { "a" : [ { } , [ ] , { "b" : [ 1 , { "c" : "d" } ] } ] } "#,
        #"{"dup":1,"dup":2,"o":{"x":{"y":{"z":[[[]]]}}}}"#,
        #"[1,"two",{"three":3}]"#,
        #""just a string""#,
        "42",
    ])
    func agreesWithFoundation(_ text: String) throws {
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(JSONValue.parse(Array(text.utf8)) == foundation)
    }

    @Test("parse refuses what is not one JSON value", arguments: [
        "", "{", #"{"a":}"#, #"{"a":1,}"#, "[1,]", "[1 2]", #"{"a" 1}"#, "{} {}", "tru", #""\ud800""#, #"{1:2}"#, "nul", "-",
        "0x1p3", "1.", ".5", "00", "01", "+1", "1e", "1e+", "-a", "inf", "nan", "[1.e5]",
    ])
    func refusesNonJSON(_ text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
    }
}
