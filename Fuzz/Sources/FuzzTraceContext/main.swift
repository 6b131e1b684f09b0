// Fuzzes TraceContext(traceparent:) (W3C Trace Context, section 3.2). Invariants besides "no crash": a parsed
// context round-trips (`TraceContext(traceparent: ctx.traceparent) == ctx`), its fields have the spec's
// shapes (lowercase hex, 32 and 16 digits, not all zero, version not ff), and for version 0 the text it
// writes equals the input; for a later version the text is the input's first 55 characters.
import FuzzSupport
import PushWorkerCore

func isLowercaseHex(_ text: String, count: Int) -> Bool {
    text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let header = fuzzInput(data, size)
    guard let context = TraceContext(traceparent: header) else { return 0 }
    require(context.version != 0xFF, "accepted version ff", input: header)
    require(isLowercaseHex(context.traceId, count: 32) && context.traceId.utf8.contains { $0 != 0x30 }, "bad trace-id \(context.traceId)", input: header)
    require(isLowercaseHex(context.parentId, count: 16) && context.parentId.utf8.contains { $0 != 0x30 }, "bad parent-id \(context.parentId)", input: header)
    let text = context.traceparent
    require(TraceContext(traceparent: text) == context, "'\(text)' does not parse back to the same context", input: header)
    require(TraceContext(traceparent: Array(text.utf8)) == context, "'\(text)' as bytes does not parse back", input: header)
    if context.version == 0 {
        require(Array(text.utf8) == header, "version 0 text '\(text)' differs from the input", input: header)
    } else {
        require(Array(text.utf8) == Array(header.prefix(55)), "version \(context.version) text '\(text)' differs from the input's first 55 bytes", input: header)
    }
    return 0
}

runFuzzer(fuzzOne)
