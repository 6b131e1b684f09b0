import Foundation
import PushWorkerCore
import PushWorkerTesting

/// The built `pushworker` executable, run as a user would run it.
enum PushWorkerExecutable {
    /// `$PUSHWORKER_EXECUTABLE`, else `pushworker` beside the test bundle (the same build directory).
    static var url: URL {
        if let path = ProcessInfo.processInfo.environment["PUSHWORKER_EXECUTABLE"] { return URL(fileURLWithPath: path) }
        return RunningCommand.builtExecutable("pushworker")
    }

    /// The package root (for `config/` and `examples/`).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// The environment every test's `pushworker` gets under `environment`: no dev bootstrap file
/// (`PUSHWORKER_DEV_BOOTSTRAP_FILE` empty), so that a test's `dev` never replaces the one a developer keeps
/// running, and a test's `produce` never finds it; a test that needs the file names its own.
func testEnvironment(_ environment: [String: String]) -> [String: String] {
    ["PUSHWORKER_DEV_BOOTSTRAP_FILE": ""].merging(environment) { $1 }
}

/// Starts `pushworker` with `arguments`.
func startPushworker(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, stdin: Data? = nil) throws -> RunningCommand {
    try RunningCommand(PushWorkerExecutable.url, arguments, environment: testEnvironment(environment), directory: directory, stdin: stdin)
}

/// Runs `pushworker` to completion.
func runPushworker(_ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, timeout: Duration = .seconds(60)) async throws
    -> (status: Int32, stdout: [String], stderr: String) {
    try await RunningCommand.run(PushWorkerExecutable.url, arguments, environment: testEnvironment(environment), stdin: stdin, timeout: timeout)
}

/// The text of a `/proc` file (``ProcessTree/readProcFile(_:)``: `open` and `read`, as these files report
/// size 0), or `nil` when it cannot be opened.
func readProcText(_ path: String) -> String? {
    ProcessTree.readProcFile(path).map { String(decoding: $0, as: UTF8.self) }
}
