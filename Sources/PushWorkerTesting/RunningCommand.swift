import Foundation
import Synchronization

/// The built `pushworker` executable, run as a user would run it.
enum PushWorkerExecutable {
    /// `$PUSHWORKER_EXECUTABLE`, else `pushworker` beside the test bundle (the same build directory).
    static var path: String {
        if let path = ProcessInfo.processInfo.environment["PUSHWORKER_EXECUTABLE"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return bundle.appendingPathComponent("pushworker").path
    }

    /// The package root (for `config/` and `examples/`).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// A child process with its stdout and stderr collected line by line.
final class RunningProcess: Sendable {
    private let process: Process
    private let output = Mutex<(stdout: [String], stderr: String)>(([], ""))

    /// Starts `pushworker` with `arguments`.
    init(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, stdin: Data? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PushWorkerExecutable.path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (name, value) in environment { env[name] = value }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        self.process = process
        try process.run()
        if let stdin { try input.fileHandleForWriting.write(contentsOf: stdin) }
        try input.fileHandleForWriting.close()
        Thread.detachNewThread { [self] in
            var buffer = Data()
            // availableData returns what the pipe holds now (read(upToCount:) would wait for a full buffer).
            while case let chunk = out.fileHandleForReading.availableData, !chunk.isEmpty {
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    self.output.withLock { $0.stdout.append(line) }
                }
            }
        }
        Thread.detachNewThread { [self] in
            while case let chunk = err.fileHandleForReading.availableData, !chunk.isEmpty {
                let text = String(decoding: chunk, as: UTF8.self)
                self.output.withLock { $0.stderr += text }
            }
        }
    }

    var stdoutLines: [String] { output.withLock { $0.stdout } }
    var stderr: String { output.withLock { $0.stderr } }
    var pid: Int32 { process.processIdentifier }

    /// Waits until stdout has at least `count` lines.
    func waitForLines(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [String] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while stdoutLines.count < count {
            guard ContinuousClock.now < deadline, process.isRunning || stdoutLines.count < count && ContinuousClock.now < deadline else {
                throw ProcessFailure("\(stdoutLines.count) of \(count) stdout lines within \(timeout); stderr: \(stderr.suffix(2000))")
            }
            if !process.isRunning {
                try await Task.sleep(for: .milliseconds(100))
                if stdoutLines.count < count { throw ProcessFailure("exited (\(process.terminationStatus)) after \(stdoutLines.count) of \(count) lines; stderr: \(stderr.suffix(2000))") }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return stdoutLines
    }

    /// Waits for the process to exit and returns its status.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw ProcessFailure("still running after \(timeout); stderr: \(stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(50))  // let the readers drain the pipes
        return process.terminationStatus
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

struct ProcessFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `pushworker` to completion.
func runPushworker(_ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)) async throws -> (status: Int32, stdout: [String], stderr: String) {
    let process = try RunningProcess(arguments, stdin: stdin)
    let status = try await process.waitForExit(timeout: timeout)
    return (status, process.stdoutLines, process.stderr)
}
