import Testing
@testable import PushWorkerCore

/// `RecordHeaders`: a record's headers in order, duplicates kept, looked up by name.
@Suite struct RecordHeadersTests {
    /// `a` twice, a null `n`, a non-UTF-8 `raw`, a value holding a NUL.
    static let headers: RecordHeaders = [
        RecordHeader(name: "a", string: "1"),
        RecordHeader(name: "n", value: nil),
        RecordHeader(name: "a", string: "2"),
        RecordHeader(name: "raw", value: [0xC3, 0x28]),
        RecordHeader(name: "nul", value: [0x61, 0x00, 0x62]),
    ]

    @Test func recordOrderAndDuplicatesAreKept() {
        let headers = Self.headers
        #expect(headers.count == 5)
        #expect(headers.map(\.name) == ["a", "n", "a", "raw", "nul"])
        #expect(headers[2] == RecordHeader(name: "a", value: Array("2".utf8)))
        #expect(headers.values(named: "a") == [Array("1".utf8), Array("2".utf8)])
    }

    @Test func lookupsByNameReadTheFirstHeader() {
        let headers = Self.headers
        #expect(headers["a"] == RecordHeader(name: "a", string: "1"))
        #expect(headers.bytes(named: "a") == Array("1".utf8))
        #expect(headers.string(named: "a") == "1")
        #expect(headers.contains("a"))
    }

    @Test func anAbsentHeaderIsNilEverywhere() {
        let headers = Self.headers
        #expect(headers["missing"] == nil)
        #expect(!headers.contains("missing"))
        #expect(headers.bytes(named: "missing") == nil)
        #expect(headers.string(named: "missing") == nil)
        #expect(headers.values(named: "missing").isEmpty)
        #expect(RecordHeaders().isEmpty && RecordHeaders()["a"] == nil)
    }

    @Test func aNullValueIsPresentWithoutBytes() {
        let headers = Self.headers
        #expect(headers.contains("n"))
        #expect(headers["n"] == RecordHeader(name: "n", value: nil))
        #expect(headers.bytes(named: "n") == nil)
        #expect(headers.string(named: "n") == nil)
        #expect(headers.values(named: "n") == [nil])
        // A null first header is the one read; the later value is in values(named:).
        let shadowed: RecordHeaders = [RecordHeader(name: "x", value: nil), RecordHeader(name: "x", string: "later")]
        #expect(shadowed.bytes(named: "x") == nil)
        #expect(shadowed.values(named: "x") == [nil, Array("later".utf8)])
    }

    @Test func bytesThatAreNotUTF8HaveNoStringView() {
        let headers = Self.headers
        #expect(headers.bytes(named: "raw") == [0xC3, 0x28])
        #expect(headers.string(named: "raw") == nil)
        #expect(headers["raw"]?.string == nil)
        // A NUL in a value is kept in both views, never a cut.
        #expect(headers.bytes(named: "nul") == [0x61, 0x00, 0x62])
        #expect(headers.string(named: "nul") == "a\u{0}b")
        #expect(RecordHeader(name: "e", value: []).string == "")
    }

    @Test func namesMatchExactlyByteForByte() {
        let kelvin = "\u{212A}ey"  // KELVIN SIGN: canonically equivalent to "Key", other bytes
        #expect(kelvin == "Key", "String's == treats them as equal: the lookup must not")
        let headers: RecordHeaders = [RecordHeader(name: kelvin, string: "spoof"), RecordHeader(name: "key", string: "lower")]
        #expect(headers["Key"] == nil)
        #expect(!headers.contains("Key"))
        #expect(headers.string(named: kelvin) == "spoof")
        #expect(headers.string(named: "key") == "lower")
    }

    @Test func theTupleShapeStillBuildsHeaders() {
        let pairs: [(name: String, value: [UInt8]?)] = [("a", Array("1".utf8)), ("n", nil)]
        let headers = RecordHeaders(pairs)
        #expect(headers == [RecordHeader(name: "a", string: "1"), RecordHeader(name: "n", value: nil)])
        #expect(headers != [RecordHeader(name: "a", string: "1")])
        var grown = headers
        grown.append(RecordHeader(name: "b", string: "2"))
        #expect(grown.map(\.name) == ["a", "n", "b"] && headers.count == 2)
        // Job and InputRecord take the tuple literals their callers wrote before RecordHeaders.
        let job = Job(messageId: "m", type: nil, value: Payload.silent(), headers: [("apns-priority", Array("10".utf8)), ("x", nil)], source: source(0))
        #expect(job.headers == [RecordHeader(name: "apns-priority", string: "10"), RecordHeader(name: "x", value: nil)])
        let record = InputRecord(source: source(0), value: nil, headers: [("x", [0xFF])], receivedAtMs: 0)
        #expect(record.headers.bytes(named: "x") == [0xFF])
        #expect(record.header("x") == nil)
    }
}
