import Foundation
import Testing
@_spi(Reference) @testable import PushWorkerCore

/// The validator's single pass (`PayloadScan`) against its reference passes (the UTF-8 check, the
/// strictness pass, cJSON and the envelope scan): the same verdict for every value, detail included, and the
/// single pass reads a value itself exactly when the reference passes take it past row 2 (with the same
/// envelope), so that only values rejected as invalidPayload are read twice.
@Suite struct SinglePassDifferentialTests {
    /// The single pass and the reference passes on `value`: the same verdict (detail included), and the
    /// single pass reads the value itself exactly when the reference passes take it past row 2, with the
    /// same envelope.
    static func expectSinglePassAgrees(_ value: [UInt8], validator: PayloadValidator = PayloadValidator(),
                                       sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = String(decoding: value.prefix(300), as: UTF8.self)
        let verdict = validator.validate(value: value, apnsExpirationHeader: nil, nowMs: 0)
        let reference = validator.validateByReferencePasses(value: value, apnsExpirationHeader: nil, nowMs: 0)
        #expect(verdict == reference, "\(shown)", sourceLocation: sourceLocation)
        let single = PayloadScan.read(value)
        switch PayloadValidator.referenceEnvelope(value) {
        case .success(let envelope):
            #expect(single == envelope, "the single pass left to the reference passes a value they read: \(shown)", sourceLocation: sourceLocation)
        case .failure(let problem):
            #expect(single == nil, "the single pass read a value the reference passes reject (\(problem.detail)): \(shown)", sourceLocation: sourceLocation)
        }
        #expect(PayloadValidator.singlePassReads(value) == PayloadValidator.referencePassesRead(value), "\(shown)", sourceLocation: sourceLocation)
    }

    /// Seeds for the mutations below: the single pass's edges (escapes, surrogates, UTF-8, numbers, nesting).
    static let seeds: [String] = [
        #"{"aps":{"content-available":1},"type":"t\u00e9\ud83d\ude80","s":"Grüße 🚀","n":-0.5e+10,"z":0}"#,
        #"{"type":"x","aps":{"alert":{"title":"a"},"content-available":10e-1,"sound":""},"a":[[],{},[1,-2,3.25E2]]}"#,
        #"{ "aps" : { "content-available" : true } , "type" : null , "l" : [ false , null , "\/" ] }"#,
        #"{"aps":{"content-available":"1"},"type":"q","e":"\uD834\uDD1E\u0000\u001f","k\u0000":{"aps":1}}"#,
    ]

    static let alphabet = Array(#"{}[]:,"\u0123456789abcdefABCDEF-+.eE tfn"#.utf8)
        + [0x09, 0x0A, 0x0D, 0x0B, 0x00, 0x7F, 0xC3, 0xA9, 0xED, 0xA0, 0xF0, 0x9F, 0xFF, 0xEF, 0xBB, 0xBF]

    @Test func mutatedEdgePayloadsAgree() async {
        var random = EnvelopeDifferentialTests.Generator(state: 11)
        // Light under a sanitizer (.ci/run sets PUSHWORKER_SANITIZER).
        let iterations = ProcessInfo.processInfo.environment["PUSHWORKER_SANITIZER"] == nil ? 20_000 : 2_000
        var singlePassRead = 0
        for iteration in 0..<iterations {
            // CPU-bound for seconds: it lets other tests take this thread of the two-thread pool now and then.
            if iteration % 64 == 0 { await Task.yield() }
            var value = Array(Self.seeds[iteration % Self.seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<value.count, using: &random)
                let byte = Self.alphabet.randomElement(using: &random) ?? 0x20
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where value.count > 1: value.remove(at: position)
                case 1: value.insert(byte, at: position)
                default: value[position] = byte
                }
            }
            Self.expectSinglePassAgrees(value)
            if PayloadScan.read(value) != nil { singlePassRead += 1 }
        }
        #expect(singlePassRead > iterations / 10, "the mutations keep enough payloads valid to compare")
    }

    /// A push with `member` (`"key":value`) added after its envelope.
    static func push(_ member: String) -> [UInt8] {
        Array(#"{"aps":{"content-available":1},"type":"ok","#.utf8) + Array(member.utf8) + [UInt8(ascii: "}")]
    }

    @Test("the single pass at its edges", arguments: [
        // Numbers: RFC 8259's grammar, of any length (upstream cJSON 1.7.15 refuses one of 64 characters or
        // more; Debian's 1.7.15-1+deb12u4 does not).
        #""n":"# + String(repeating: "1", count: 63),
        #""n":"# + String(repeating: "1", count: 64),
        #""n":-0."# + String(repeating: "5", count: 61),
        #""n":"# + String(repeating: "9", count: 2000),
        #""n":[0,-0,0.0,1e5,1E+5,1e-05,-1.5E-0]"#, #""n":01"#, #""n":1."#, #""n":.5"#, #""n":-"#, #""n":+1"#, #""n":1e"#,
        #""n":1e+"#, #""n":0x10"#, #""n":1.5.5"#, #""n":Infinity"#, #""n":NaN"#, #""n":1e999"#, #""n":-01"#, #""n":1e5e5"#,
        // Literals.
        #""l":[true,false,null]"#, #""l":tru"#, #""l":nulll"#, #""l":True"#,
        // Escapes and surrogates (cJSON refuses a lone one).
        #""s":"\ud83d\ude80\uD834\uDD1E""#, #""s":"\ud83d""#, #""s":"\ude80""#, #""s":"\ud83d\u0041""#, #""s":"\ud83dx""#,
        #""s":"\u00""#, #""s":"\x""#, #""s":"\""#, #""\u0074ype":"x""#, #""aps\u0000":1"#, #""s":"a\u0000b""#,
        // Nesting past 64 open levels and up to cJSON's 1000.
        #""d":"# + String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
        #""d":"# + String(repeating: #"[{"a":"#, count: 70) + "1" + String(repeating: "}]", count: 70),
        #""d":"# + String(repeating: "[", count: 998) + String(repeating: "]", count: 998),
        #""d":"# + String(repeating: "[", count: 999) + String(repeating: "]", count: 999),
        #""d":"# + String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000),
        #""d":"# + String(repeating: "[", count: 70) + String(repeating: "]", count: 69) + "}",
        #""d":"# + String(repeating: "[", count: 70) + "}" + String(repeating: "]", count: 69),
        // Duplicated envelope keys, and the same names elsewhere.
        #""type":"again""#, #""aps":{}"#, #""d":{"type":1,"type":2,"aps":3,"aps":4}"#,
    ])
    func edges(_ member: String) {
        Self.expectSinglePassAgrees(Self.push(member), validator: PayloadValidator(maxPayloadBytes: 8192))
    }

    @Test("the single pass around the object and in aps", arguments: [
        " \t\r\n{}", "{}", "{} \n", "{}\u{0B}", "\u{FEFF}{}", "{}{}", "[]", #"{"aps":{"content-available":1}}x"#, #"{"a":1,}"#,
        #"{"aps":{"content-available":1,"content-available":1}}"#, #"{"aps":{"content-available":[1]}}"#,
        #"{"aps":{"content-available":{}}}"#, #"{"aps":{"content-available":"1\u0000"}}"#, #"{"aps":[]}"#, #"{"aps":null}"#,
        #"{"aps":{"content-available":1.0}}"#, #"{"aps":{"content-available":1e999}}"#, #"{"aps":{"content-available":-1}}"#,
        #"{"aps":{"content-available":1 }}"#, #"{"aps":{"content-available":01}}"#, #"{"aps":{"content-available":"\ud83d"}}"#,
    ])
    func aroundTheObject(_ text: String) {
        Self.expectSinglePassAgrees(Array(text.utf8))
    }

    @Test func everyValidationCaseAgrees() {
        var read = 0
        var past2 = 0
        for testCase in ValidationCase.all {
            guard let value = testCase.value else { continue }
            Self.expectSinglePassAgrees(value, validator: PayloadValidator(maxPayloadBytes: 8192))
            if PayloadValidator.singlePassReads(value) { read += 1 }
            if PayloadValidator.referencePassesRead(value) { past2 += 1 }
        }
        // The accepted, row-3 and row-4 cases are read by the single pass, not left to the reference passes.
        #expect(past2 >= 25)
        #expect(read == past2)
    }
}
