import Foundation
import Testing
@testable import PushWorkerCore

/// `TraceContext` against W3C Trace Context level 1, section 3.2 (`traceparent`): version 00 exactly, later
/// versions as its section 3.2.4 says to parse them, the invalid values.
@Suite struct TraceContextTests {
    static let traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentId = "00f067aa0ba902b7"

    static func header(version: String = "00", traceId: String = traceId, parentId: String = parentId, flags: String = "01") -> String {
        "\(version)-\(traceId)-\(parentId)-\(flags)"
    }

    @Test(arguments: [("00", UInt8(0x00), false), ("01", 0x01, true), ("02", 0x02, false), ("09", 0x09, true), ("ff", 0xFF, true), ("fe", 0xFE, false)])
    func flagsAreKeptWholeAndBitZeroIsSampled(flags: String, value: UInt8, sampled: Bool) throws {
        let context = try #require(TraceContext(traceparent: Self.header(flags: flags)))
        #expect(context.flags == value)
        #expect(context.isSampled == sampled)
        #expect((context.flags & TraceContext.sampledFlag != 0) == sampled)
        #expect(context.traceparent == Self.header(flags: flags))
    }

    @Test func aLaterVersionOfExactly55CharactersParses() throws {
        let context = try #require(TraceContext(traceparent: Self.header(version: "cc", flags: "03")))
        #expect(context.version == 0xCC)
        #expect(context.traceId == Self.traceId && context.parentId == Self.parentId)
        #expect(context.flags == 0x03 && context.isSampled)
        #expect(TraceContext(traceparent: Self.header(version: "fe")) != nil)
    }

    @Test func aLaterVersionKeepsTheFieldsItKnowsAndIgnoresTheRest() throws {
        let context = try #require(TraceContext(traceparent: Self.header(version: "01") + "-what-the-future-holds"))
        #expect(context.traceparent == Self.header(version: "01"))
        #expect(TraceContext(traceparent: Self.header(version: "01") + "-") != nil)
        #expect(TraceContext(traceparent: Self.header(version: "01") + ".x") == nil, "after the flags: the end or a dash")
    }

    @Test(arguments: [
        // version 00 is exactly 55 characters
        header() + "-01", header() + " ", " " + header(), header().dropLast().description,
        // a later version shorter than 55 characters
        header(version: "01").dropLast().description,
        // lowercase hex only, in every field
        header(version: "0A"), header(traceId: traceId.uppercased()), header(parentId: "00F067AA0BA902B7"), header(flags: "0A"),
        // not hex
        header(version: "0g"), header(traceId: "4bf92f3577b34da6a3ce929d0e0e473z"), header(parentId: "00f067aa0ba902b-"), header(flags: "-1"),
        // all-zero ids, version ff
        header(traceId: String(repeating: "0", count: 32)), header(parentId: String(repeating: "0", count: 16)), header(version: "ff"),
        header(version: "ff") + "-x",
        // wrong separators, or fields of the wrong length
        header().replacingOccurrences(of: "-", with: "_"),
        "00-\(traceId)0-\(parentId.dropLast())-01", "00-\(traceId.dropLast())-0\(parentId)-01", "00-\(traceId)-\(parentId)0-1",
    ])
    func malformedIsNil(text: String) {
        #expect(TraceContext(traceparent: text) == nil, "\(text)")
    }

    @Test func aJobsTraceContextIsNilWhenAbsentOrMalformed() throws {
        #expect(makeJob().traceContext == nil)
        var job = makeJob()
        job.traceparent = Self.header(traceId: String(repeating: "0", count: 32))
        #expect(job.traceparent != nil && job.traceContext == nil)
        job.traceparentHeader = [0xFF] + Array(Self.header().utf8.dropFirst())
        #expect(job.traceContext == nil)
        job.traceparent = Self.header(flags: "00")
        let context = try #require(job.traceContext)
        #expect(context.traceId == Self.traceId && context.parentId == Self.parentId && !context.isSampled)
    }
}
