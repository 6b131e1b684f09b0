import Foundation
import Testing
@testable import PushWorkerCore

/// The rows of contract section 2 (rows 1–4) as test cases, shared by the validator tests and the
/// dispatcher tests. Reasons are spelled as the contract spells them, not through the library's constants.
struct ValidationCase: Sendable, CustomTestStringConvertible {
    enum Expected: Sendable, Equatable {
        /// Passes rows 1–4; the payload's string `type` (or nil).
        case accepted(type: String?)
        /// Rejected with this result and reason (contract spelling).
        case rejected(result: String, reason: String)
    }

    let name: String
    let value: [UInt8]?
    /// The `apns-expiration` header text, or nil when absent.
    let expiration: String?
    let expected: Expected

    init(_ name: String, _ value: [UInt8]?, expiration: String? = nil, _ expected: Expected) {
        self.name = name
        self.value = value
        self.expiration = expiration
        self.expected = expected
    }

    var testDescription: String { name }

    static let invalid = Expected.rejected(result: "failed", reason: "invalidPayload")
    static let tooLarge = Expected.rejected(result: "failed", reason: "payloadTooLarge")
    static let notSilent = Expected.rejected(result: "noData", reason: "notSilent")
    static let expired = Expected.rejected(result: "noData", reason: "expired")
    static let ok = Expected.accepted(type: "content-update")

    static var pastExpiration: String { String(WallClock.nowMs() / 1000 - 60) }
    static var futureExpiration: String { String(WallClock.nowMs() / 1000 + 3600) }

    static func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A 4097-byte value that is also invalid JSON: only the size check can reject it as too large.
    static var tooLargeAndInvalidJSON: [UInt8] {
        let value = Array(#"{"aps":{"content-available":1},"pad":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 4097 - 38)
        precondition(value.count == 4097)
        return value
    }

    static var all: [ValidationCase] {
        let t = #","type":"content-update""#
        return [
            // Row 3: aps.content-available must be the integer 1.
            .init("content-available true", json(#"{"aps":{"content-available":true}\#(t)}"#), notSilent),
            .init("content-available \"1\"", json(#"{"aps":{"content-available":"1"}\#(t)}"#), notSilent),
            .init("content-available 0", json(#"{"aps":{"content-available":0}\#(t)}"#), notSilent),
            .init("content-available 2", json(#"{"aps":{"content-available":2}\#(t)}"#), notSilent),
            .init("content-available null", json(#"{"aps":{"content-available":null}\#(t)}"#), notSilent),
            .init("content-available 1 (accepted)", json(#"{"aps":{"content-available":1}\#(t)}"#), ok),
            .init("content-available 1 beside alert keys (accepted)", json(#"{"aps":{"alert":"hi","content-available":1,"sound":""}\#(t),"contentId":"a-1"}"#), ok),
            .init("missing aps", json(#"{"type":"content-update","contentId":"a-1"}"#), notSilent),
            .init("aps is a number", json(#"{"aps":1\#(t)}"#), notSilent),
            .init("aps is an array", json(#"{"aps":[{"content-available":1}]\#(t)}"#), notSilent),
            .init("aps is a string", json(#"{"aps":"content-available"\#(t)}"#), notSilent),
            .init("aps without content-available", json(#"{"aps":{"alert":"hello"}\#(t)}"#), notSilent),
            .init("content-available outside aps", json(#"{"aps":{},"content-available":1\#(t)}"#), notSilent),
            // Row 2: a JSON object in valid UTF-8.
            .init("JSON array", json(#"[{"aps":{"content-available":1}}]"#), invalid),
            .init("JSON string", json(#""hello""#), invalid),
            .init("JSON number", json("42"), invalid),
            .init("JSON null", json("null"), invalid),
            .init("JSON true", json("true"), invalid),
            .init("empty value", [], invalid),
            .init("null value (nil)", nil, invalid),
            .init("invalid UTF-8 bytes {0xFF}", [0x7B, 0xFF, 0x7D], invalid),
            .init("invalid UTF-8 inside a string of a silent push",
                  json(#"{"aps":{"content-available":1},"type":"content-update","x":""#) + [0xC3, 0x28] + json(#""}"#), invalid),
            .init("UTF-8 encoded surrogate inside a string",
                  json(#"{"aps":{"content-available":1},"type":"content-update","x":""#) + [0xED, 0xA0, 0x80] + json(#""}"#), invalid),
            .init("overlong UTF-8 inside a string",
                  json(#"{"aps":{"content-available":1},"type":"content-update","x":""#) + [0xC0, 0xAF] + json(#""}"#), invalid),
            .init("valid multi-byte UTF-8 (accepted)", json(#"{"aps":{"content-available":1}\#(t),"title":"Grüße 🚀"}"#), ok),
            .init("unterminated object", json(#"{"aps":{"content-available":1}"#), invalid),
            .init("unquoted key", json(#"{aps:{"content-available":1}}"#), invalid),
            .init("trailing comma", json(#"{"aps":{"content-available":1}\#(t),}"#), invalid),
            .init("only whitespace", json("  \n "), invalid),
            .init("trailing garbage after the object", json(#"{"aps":{"content-available":1}\#(t)}x"#), invalid),
            .init("a second object after the object", json(#"{"aps":{"content-available":1}\#(t)}{}"#), invalid),
            .init("trailing NUL after the object", json(#"{"aps":{"content-available":1}\#(t)}"#) + [0x00], invalid),
            .init("whitespace around the object (accepted)", json(" \t\r\n" + #"{"aps":{"content-available":1}\#(t)}"# + " \n\t\r"), ok),
            // Row 2 beyond syntax: duplicated envelope keys and nesting deeper than 1000 levels.
            .init("duplicate type", json(#"{"aps":{"content-available":1},"type":"evil"\#(t)}"#), invalid),
            .init("duplicate aps", json(#"{"aps":{"content-available":1},"aps":{}\#(t)}"#), invalid),
            .init("duplicate content-available", json(#"{"aps":{"content-available":1,"content-available":1}\#(t)}"#), invalid),
            .init("2000 nested arrays in 4048 bytes", json(#"{"aps":{"content-available":1}\#(t),"d":"# + String(repeating: "[", count: 2000)
                  + String(repeating: "]", count: 2000) + "}"), invalid),
            .init("999 nested arrays, depth 1000 (accepted)", json(#"{"aps":{"content-available":1}\#(t),"d":"# + String(repeating: "[", count: 999)
                  + String(repeating: "]", count: 999) + "}"), ok),
            .init("escaped type key (accepted)", json(#"{"aps":{"content-available":1},"\u0074ype":"content-update"}"#), ok),
            .init("aps key with a NUL is not aps", json(#"{"aps\u0000":{"content-available":1}\#(t)}"#), notSilent),
            // Row 1: the size limit, before parsing.
            .init("exactly 4096 bytes (accepted)", Payload.silent(ofSize: 4096), ok),
            .init("4097 bytes of invalid JSON", tooLargeAndInvalidJSON, tooLarge),
            .init("4097 bytes of a valid silent push", Payload.silent(ofSize: 4097), tooLarge),
            // Row 4: apns-expiration.
            .init("apns-expiration in the past", Payload.silent(), expiration: pastExpiration, expired),
            .init("apns-expiration 1 (1970)", Payload.silent(), expiration: "1", expired),
            .init("apns-expiration 0 never expires (accepted)", Payload.silent(), expiration: "0", ok),
            .init("apns-expiration in the future (accepted)", Payload.silent(), expiration: futureExpiration, ok),
            .init("apns-expiration absent (accepted)", Payload.silent(), ok),
            .init("apns-expiration not numeric", Payload.silent(), expiration: "tomorrow", invalid),
            .init("apns-expiration negative", Payload.silent(), expiration: "-5", invalid),
            // The order of the rows.
            .init("too large beats expired", tooLargeAndInvalidJSON, expiration: pastExpiration, tooLarge),
            .init("invalid JSON beats expired", json(#"{"aps":"#), expiration: pastExpiration, invalid),
            .init("not silent beats expired", json(#"{"aps":{"content-available":0}\#(t)}"#), expiration: pastExpiration, notSilent),
        ]
    }
}
