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
        // RFC 8259 leaves duplicate names unspecified (JSONDecoder keeps the first, JSONSerialization the
        // last), so a body that may name `result` twice (literally or through a \u escape) is only checked
        // for giving one of the three results.
        let text = String(decoding: body, as: UTF8.self)
        let ambiguous = text.components(separatedBy: "result").count > 2 || text.contains("\\u")
        require(outcome.result == expected || ambiguous, "status \(status) gave \(outcome.result); JSONSerialization reads \(expected)", input: input)
    default:
        require(outcome.result == .failed && outcome.reason == .workerError && outcome.detail?.contains("\(status)") == true,
                "status \(status) gave \(outcome)", input: input)
    }
    return 0
}

runFuzzer(fuzzOne)
