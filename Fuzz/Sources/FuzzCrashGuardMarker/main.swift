// Fuzzes CrashGuardMarker(bytes:), the reader of the metadata committed for the crash guard's group (any
// client of the cluster can commit there). Invariants besides "no crash": a marker read round-trips
// (`CrashGuardMarker(bytes: marker.bytes) == marker`), its numbers are not negative, its text starts with
// the prefix and is within the limit, and the reader refuses what is longer than the limit.
import FuzzSupport
import PushWorkerCore

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    guard let marker = CrashGuardMarker(bytes: input) else { return 0 }
    require(input.count <= CrashGuardMarker.maxBytes, "read a marker longer than the limit", input: input)
    require(marker.lease >= 0, "negative lease \(marker.lease)", input: input)
    if case .running(let offset, let deaths, let cleared) = marker.ending {
        require(offset >= 0 && deaths >= 0 && (cleared ?? 0) >= 0, "negative running=\(offset) deaths=\(deaths) cleared=\(String(describing: cleared))", input: input)
    }
    let text = marker.bytes
    require(text.starts(with: CrashGuardMarker.prefix) && text.count <= CrashGuardMarker.maxBytes, "written text out of shape", input: input)
    require(CrashGuardMarker(bytes: text) == marker, "'\(String(decoding: text, as: UTF8.self))' does not read back to the same marker", input: input)
    return 0
}

runFuzzer(fuzzOne)
