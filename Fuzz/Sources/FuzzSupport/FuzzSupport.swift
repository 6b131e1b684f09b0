#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's driver (compiler-rt `FuzzerDriver.cpp`): parses libFuzzer's command line and calls `callback`
/// with each input. Declared by hand because libFuzzer ships no module; it exists only in binaries linked
/// with `-sanitize=fuzzer`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Hands control to libFuzzer with `callback` as the test function and exits with its status.
/// Call it from a fuzz target's `main.swift`; the callback is the target's `LLVMFuzzerTestOneInput`.
public func runFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
}

/// The fuzz input as an array (libFuzzer passes a null pointer for the empty input).
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Fails the run when an invariant does not hold: prints `message` and the input (escaped) to stderr and
/// aborts, which libFuzzer reports as a crash and saves as `crash-…`.
public func require(_ condition: Bool, _ message: @autoclosure () -> String, input: [UInt8], file: StaticString = #file, line: UInt = #line) {
    guard !condition else { return }
    let shown = input.prefix(512).map { byte -> String in
        byte >= 0x20 && byte < 0x7F && byte != 0x5C ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }.joined()
    let report = Array("INVARIANT BROKEN at \(file):\(line): \(message())\ninput (\(input.count) bytes): \(shown)\n".utf8)
    _ = report.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}
