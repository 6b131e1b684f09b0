// Fuzzes the configuration loader: ServiceConfiguration().apply(json5:file:environment:) with the input as the
// file, then check(). Both may only throw ConfigurationError; any other error, a crash or a trap is a bug.
// A ConfigurationError must name what is wrong (a non-empty message).
import Foundation
import FuzzSupport
import PushWorker

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    var configuration = ServiceConfiguration()
    do {
        try configuration.apply(json5: Data(input), file: "fuzz.json5", environment: ["FUZZ_SECRET": "s3cret"])
        try configuration.check()
    } catch let error as ConfigurationError {
        require(!"\(error)".isEmpty, "a ConfigurationError without a message", input: input)
    } catch {
        require(false, "threw \(type(of: error)) instead of ConfigurationError: \(error)", input: input)
    }
    return 0
}

runFuzzer(fuzzOne)
