// Fuzzes HTTPWorker.outcome(status:body:), which reads an http worker's 2xx response body
// (`{"result": "noData", "reason": "…"}`). The first input byte picks the HTTP status; the rest is the body.
// Invariants besides "no crash": 204 is noData whatever the body; a non-2xx status is failed/workerError
// with a detail naming it; a 2xx body that is not a JSON object with a valid `result` string is newData;
// a valid one gives that result.
import Foundation
import FuzzSupport
import PushWorkerCore

let statuses = [200, 201, 202, 204, 299, 300, 404, 500, 503, 100, 0, -1]

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let status = statuses[Int(input.first ?? 0) % statuses.count]
    let body = Data(input.dropFirst())
    let outcome = HTTPWorker.outcome(status: status, body: body)
    switch status {
    case 204:
        require(outcome == .noData, "204 gave \(outcome)", input: input)
    case 200..<300:
        // The reference: Foundation's JSONSerialization reading a top-level object's `result` string.
        var expected = BackgroundFetchResult.newData
        if !body.isEmpty, body.count <= HTTPWorker.maxParsedBodyBytes,
           let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
           let text = object["result"] as? String, let result = BackgroundFetchResult(rawValue: text) {
            expected = result
        }
        // RFC 8259 leaves duplicate names unspecified: JSONDecoder keeps the first and never validates the
        // value of a duplicate it skips (so a second `"reason":"\u{0}"` with a raw control character passes),
        // JSONSerialization rejects or keeps the last. A body with a repeated top-level name (or a \u
        // escape, which can spell one) is only checked for giving one of the three results.
        let ambiguous = hasRepeatedTopLevelName(Array(body)) || String(decoding: body, as: UTF8.self).contains("\\u")
        require(outcome.result == expected || ambiguous, "status \(status) gave \(outcome.result); JSONSerialization reads \(expected)", input: input)
    default:
        require(outcome.result == .failed && outcome.reason == .workerError && outcome.detail?.contains("\(status)") == true,
                "status \(status) gave \(outcome)", input: input)
    }
    return 0
}

/// Whether a top-level JSON object names a key twice (compared as raw bytes). A small scanner: strings are
/// skipped with their escapes, nesting is counted; anything it cannot read counts as no repetition.
func hasRepeatedTopLevelName(_ bytes: [UInt8]) -> Bool {
    var names = Set<[UInt8]>()
    var depth = 0
    var index = 0
    var expectingName = false
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x22 {  // a string: find its end
            var end = index + 1
            while end < bytes.count && bytes[end] != 0x22 { end += bytes[end] == 0x5C ? 2 : 1 }
            if depth == 1 && expectingName {
                if !names.insert(Array(bytes[(index + 1)..<min(end, bytes.count)])).inserted { return true }
                expectingName = false
            }
            index = end + 1
            continue
        }
        switch byte {
        case 0x7B, 0x5B:
            depth += 1
            if depth == 1 && byte == 0x7B { expectingName = true }
        case 0x7D, 0x5D: depth -= 1
        case 0x2C: if depth == 1 { expectingName = true }
        default: break
        }
        index += 1
    }
    return false
}

runFuzzer(fuzzOne)
