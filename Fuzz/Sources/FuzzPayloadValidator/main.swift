// Fuzzes PayloadValidator.validate(value:apnsExpiration:nowMs:) with the input as the record value.
// Invariants besides "no crash":
// - the single pass (PayloadScan) and the reference passes (UTF-8 check, strictness pass, cJSON, envelope
//   scan; validateByReferencePasses) give the same verdict, detail included, and the single pass reads the
//   value itself exactly when the reference passes take it past row 2;
// - a rejected verdict always has a non-empty detail;
// - a value over the size limit is always payloadTooLarge, and one within it never is (for the default
//   4096-byte limit and for a small one, so that both sides of the limit are reached);
// - an accepted value is valid UTF-8 and cJSON, called independently, parses it as an object;
// - row 4 comes after rows 1–3: an accepted value with an `apns-expiration` in the past is `expired`, and
//   with `0` (never expires) it is accepted with the same type;
// - the type is exact: where Foundation's JSONSerialization (an independent parser) reads the accepted
//   value, its string "type" is the verdict's type, all bytes kept (a `\u0000` never cuts it).
import CJSONReference
import Foundation
import FuzzSupport
@_spi(Reference) import PushWorkerCore

let defaultValidator = PayloadValidator()
let smallValidator = PayloadValidator(maxPayloadBytes: 64)
let nowMs: Int64 = 1_767_225_600_000

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let value = fuzzInput(data, size)
    let singlePassReads = PayloadValidator.singlePassReads(value)
    let referencePassesRead = PayloadValidator.referencePassesRead(value)
    require(singlePassReads == referencePassesRead,
            "the single pass \(singlePassReads ? "reads" : "leaves") a value the reference passes \(referencePassesRead ? "read" : "reject")", input: value)
    for validator in [defaultValidator, smallValidator] {
        let verdict = validator.validate(value: value, apnsExpiration: nil, nowMs: nowMs)
        let reference = validator.validateByReferencePasses(value: value, apnsExpirationHeader: nil, nowMs: nowMs)
        require(verdict == reference, "single pass: \(verdict); reference passes: \(reference)", input: value)
        switch verdict {
        case .rejected(let result, let reason, let detail):
            require(!detail.isEmpty, "rejected (\(result), \(reason)) with an empty detail", input: value)
            if value.count > validator.maxPayloadBytes {
                require(result == .failed && reason == .payloadTooLarge, "\(value.count) bytes over the \(validator.maxPayloadBytes)-byte limit gave \(reason)", input: value)
            } else {
                require(reason != .payloadTooLarge, "\(value.count) bytes within the \(validator.maxPayloadBytes)-byte limit gave payloadTooLarge", input: value)
            }
        case .accepted(let type):
            require(value.count <= validator.maxPayloadBytes, "\(value.count) bytes over the limit accepted", input: value)
            require(String(validating: value, as: UTF8.self) != nil, "accepted a value that is not valid UTF-8", input: value)
            let kind = value.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { cjson_reference_kind($0.baseAddress, $0.count) }
            }
            require(kind == 1, "accepted a value cJSON does not parse as an object (kind \(kind))", input: value)
            let expired = validator.validate(value: value, apnsExpiration: "1", nowMs: nowMs)
            require(expired.isExpired, "accepted, but with apns-expiration 1 gave \(expired) instead of expired", input: value)
            let never = validator.validate(value: value, apnsExpiration: "0", nowMs: nowMs)
            require(never == .accepted(type: type), "accepted, but with apns-expiration 0 gave \(never)", input: value)
            if let object = try? JSONSerialization.jsonObject(with: Data(value)) as? [String: Any] {
                let reference = object["type"] as? String
                require(reference == type, "accepted with type \(String(reflecting: type)), JSONSerialization reads \(String(reflecting: reference))", input: value)
            }
        }
    }
    return 0
}

extension PayloadValidator.Verdict {
    var isExpired: Bool {
        if case .rejected(.noData, .expired, let detail) = self { return !detail.isEmpty }
        return false
    }
}

runFuzzer(fuzzOne)
