import Foundation
import Testing
@_spi(Reference) @testable import PushWorkerCore

/// The exact readers against Foundation on many mutated payloads (fixed seed, so a failure repeats): they
/// never trap, `JSONValue.parse` reads what `JSONDecoder` reads, and an accepted push's `type` is the one
/// Foundation sees; the validator's single pass agrees with its reference passes on each of them.
@Suite struct EnvelopeDifferentialTests {
    /// A small deterministic generator (SplitMix64).
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let seeds: [String] = [
        #"{"aps":{"content-available":1},"type":"content-update","contentId":"a-1"}"#,
        #"{"type":"ok\u0000evil","aps":{"alert":"hi","content-available":1.0},"n":[1,2,{"x":null}]}"#,
        #"{"\u0074ype":"\ud83d\ude80","aps":{"content\u002davailable":1e0},"s":"\"\\\/\b\f\n\r\t"}"#,
        #"{"aps":{"content-available":"1"},"type":["x"],"deep":[[[[{"a":[true,false]}]]]]}"#,
    ]

    static let alphabet = Array(#"{}[]:,"\u0000 aps type content-available 1 0 -.e\\/"#.utf8) + [0xC3, 0xA9, 0xFF, 0x00, 0x0A]

    static func mutate(_ bytes: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0 where !bytes.isEmpty: bytes.remove(at: position)
            case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: position)  // invariant: a non-empty literal
            default: if !bytes.isEmpty { bytes[position] = alphabet.randomElement(using: &random)! }  // invariant: a non-empty literal
            }
        }
        return bytes
    }

    @Test func mutatedPayloadsAgreeWithFoundation() async {
        var random = Generator(state: 8)
        let validator = PayloadValidator()
        var acceptedCount = 0
        // Under a sanitizer (.ci/run sets PUSHWORKER_SANITIZER) the single pass is compared on every tenth value.
        let compareEvery = ProcessInfo.processInfo.environment["PUSHWORKER_SANITIZER"] == nil ? 1 : 10
        for iteration in 0..<20_000 {
            // CPU-bound for tens of seconds: without a yield it held one of the two threads of the
            // cooperative pool, and with another such test both (CI saw a 100 ms sleep wake after 3 s).
            if iteration % 64 == 0 { await Task.yield() }
            let value = Self.mutate(Array(Self.seeds[iteration % Self.seeds.count].utf8), &random)
            let verdict = validator.validate(value: value, apnsExpiration: nil, nowMs: 0)
            if iteration % compareEvery == 0 { SinglePassDifferentialTests.expectSinglePassAgrees(value, validator: validator) }
            _ = PayloadEnvelope.read(value)  // never traps, whatever the bytes
            let foundation = try? JSONDecoder().decode(JSONValue.self, from: Data(value))
            let parsed = JSONValue.parse(value)
            // Foundation also reads some text that is not JSON (a trailing comma): compare on RFC 8259 text.
            let isJSON = PayloadValidator.strictnessProblem(value) == nil && PayloadValidator.syntaxProblem(value) == nil
            if let foundation, isJSON {
                #expect(parsed == foundation, "\(String(decoding: value, as: UTF8.self))")
            }
            if isJSON, foundation == nil, PayloadValidator.isValidUTF8(value) {
                Issue.record("cJSON and the strict pass accept what Foundation does not: \(String(decoding: value, as: UTF8.self))")
            }
            guard case .accepted(let type) = verdict else { continue }
            acceptedCount += 1
            // Accepted means Foundation reads it as an object too, and agrees on the type.
            guard case .object(let object)? = foundation else {
                Issue.record("accepted what Foundation does not read as an object: \(String(decoding: value, as: UTF8.self))")
                continue
            }
            #expect(object["type"]?.stringValue == type, "\(String(decoding: value, as: UTF8.self))")
        }
        #expect(acceptedCount > 100, "the mutations keep enough payloads valid to compare")
    }
}
