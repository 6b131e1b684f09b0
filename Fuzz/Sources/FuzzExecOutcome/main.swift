// Fuzzes ExecWorker.outcome(status:signaled:stdout:), which reads an exec worker's first stdout line
// (`newData`, `noData` or `failed`, optionally followed by a reason). The first two input bytes choose the
// exit status and whether the program was signaled; the rest is stdout. Invariants besides "no crash": a
// line whose first word is a result gives that result; a reason, when present, is non-empty and has no
// surrounding spaces or line breaks; without a result word the outcome is newData for exit status 0 and
// failed with a detail otherwise.
import Foundation
import FuzzSupport
import PushWorkerCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let status = Int32(input.first ?? 0) - 64
    let signaled = input.count > 1 && input[1] & 1 == 1
    let stdout = Data(input.dropFirst(2))
    let outcome = ExecWorker.outcome(status: status, signaled: signaled, stdout: stdout)
    if let reason = outcome.reason {
        require(!reason.rawValue.isEmpty, "an empty reason", input: input)
        require(!reason.rawValue.contains("\n"), "a reason across lines: \(reason)", input: input)
        require(reason.rawValue.trimmingCharacters(in: .whitespaces) == reason.rawValue, "a reason with surrounding spaces: '\(reason)'", input: input)
    }
    // The reference: the first line (up to the first LF; carriage returns at either end are not part of it,
    // as the worker reads it), its first space-separated word.
    var line = stdout.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first.map { Array($0) } ?? []
    while line.first == 0x0D { line.removeFirst() }
    while line.last == 0x0D { line.removeLast() }
    let word = line.split(separator: 0x20, maxSplits: 1, omittingEmptySubsequences: false).first.map { Array($0) } ?? []
    if let result = BackgroundFetchResult(rawValue: String(decoding: word, as: UTF8.self)), String(validating: word, as: UTF8.self) != nil {
        require(outcome.result == result, "the line starts with \(result) but the outcome is \(outcome.result)", input: input)
    } else if outcome.reason == nil && outcome.detail == nil && outcome.result == .newData {
        require(!signaled && status == 0, "newData without a result word for status \(status) signaled \(signaled)", input: input)
    }
    if !signaled && status != 0 && outcome.result == .failed && outcome.reason == .workerError {
        require(outcome.detail?.isEmpty == false, "a worker error without a detail", input: input)
    }
    return 0
}

runFuzzer(fuzzOne)
