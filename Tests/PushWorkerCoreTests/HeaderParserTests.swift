import Testing
@testable import PushWorkerCore

/// The `apns-expiration` and `traceparent` header parsers.
@Suite struct HeaderParserTests {
    @Test(arguments: [
        ("0", Int64(0)), ("1767225600", 1_767_225_600), ("  42 ", 42), ("9223372036854775807", Int64.max),
    ])
    func expirationParses(text: String, seconds: Int64) {
        #expect(APNsExpiration(header: Array(text.utf8))?.seconds == seconds)
    }

    @Test(arguments: ["", " ", "-1", "+1", "1.5", "1e3", "abc", "12 34", "9223372036854775808", "00000000000000000001", "1\u{0}"])
    func malformedExpirationIsNil(text: String) {
        #expect(APNsExpiration(header: Array(text.utf8)) == nil)
    }

    @Test func expirationBytesThatAreNotUTF8AreMalformed() {
        #expect(APNsExpiration(header: [0x31, 0xFF]) == nil)
    }

    @Test func expirationPassing() {
        #expect(!APNsExpiration(seconds: 0).hasPassed(atMs: .max))
        #expect(APNsExpiration(seconds: 10).hasPassed(atMs: 10_000))
        #expect(!APNsExpiration(seconds: 10).hasPassed(atMs: 9_999))
        #expect(!APNsExpiration(seconds: .max).hasPassed(atMs: .max))
    }

    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func traceparentParses() throws {
        let context = try #require(TraceContext(traceparent: Self.valid))
        #expect(context.version == 0)
        #expect(context.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.parentId == "00f067aa0ba902b7")
        #expect(context.flags == 1)
        #expect(context.isSampled)
        #expect(context.traceparent == Self.valid)
    }

    @Test func laterVersionsMayCarryMoreFields() throws {
        let context = try #require(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra"))
        #expect(context.version == 1)
        #expect(!context.isSampled)
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00x") == nil)
    }

    @Test(arguments: [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    ])
    func malformedTraceparentIsNil(text: String) {
        #expect(TraceContext(traceparent: text) == nil)
    }

    @Test func traceparentWithANulOrNonUTF8ByteIsNil() {
        var bytes = Array(Self.valid.utf8)
        bytes[10] = 0
        #expect(TraceContext(traceparent: bytes) == nil)
        bytes[10] = 0xFF
        #expect(TraceContext(traceparent: bytes) == nil)
    }
}
