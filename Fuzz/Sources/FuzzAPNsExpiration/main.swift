// Fuzzes APNsExpiration(header:) against a simple reference: after trimming spaces (0x20) at both ends,
// the header must be 1 to 19 ASCII digits (the type's documented rule: Int64.max has 19 digits, and more,
// even leading zeros, are malformed) whose value is at most Int64.max; then `seconds` is that value.
// Anything else parses as nil.
import FuzzSupport
import PushWorkerCore

/// The reference reading of an `apns-expiration` header, written independently of the parser.
func referenceSeconds(_ header: [UInt8]) -> Int64? {
    var digits = header[...]
    while digits.first == 0x20 { digits.removeFirst() }
    while digits.last == 0x20 { digits.removeLast() }
    guard (1...19).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
    // Compared with Int64.max as text (leading zeros removed), so the reference needs no overflow arithmetic.
    let significant = Array(digits.drop(while: { $0 == 0x30 }))
    let maximum = Array(String(Int64.max).utf8)
    if significant.count == maximum.count && maximum.lexicographicallyPrecedes(significant) { return nil }
    return significant.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let header = fuzzInput(data, size)
    let parsed = APNsExpiration(header: header)
    let expected = referenceSeconds(header)
    require(parsed?.seconds == expected, "parsed \(parsed.map { String($0.seconds) } ?? "nil"), the reference says \(expected.map { String($0) } ?? "nil")", input: header)
    if let parsed {
        require(parsed.neverExpires == (parsed.seconds == 0), "neverExpires disagrees with seconds \(parsed.seconds)", input: header)
        // hasPassed must not trap for any time, and 0 never passes.
        for now in [Int64.min, -1, 0, 1_767_225_600_000, Int64.max] {
            let passed = parsed.hasPassed(atMs: now)
            if parsed.seconds == 0 { require(!passed, "0 (never expires) passed at \(now)", input: header) }
        }
    }
    return 0
}

runFuzzer(fuzzOne)
