import Foundation
import Synchronization

/// A command-line program run as a child process, with its stdout collected line by line and its stderr
/// as text: for end-to-end tests of a built `pushworker` (or your own executable built with
/// `PushWorkerCommandLine`) exactly as users run it.
/// ```swift
/// let dev = try RunningCommand(RunningCommand.builtExecutable("content-pushworker"), ["dev", "--config", path])
/// let servers = try await dev.waitForLines(1)[0].dropFirst("bootstrap.servers=".count)
/// dev.signal(SIGTERM)
/// #expect(try await dev.waitForExit() == 0)
/// ```
/// The process is killed (SIGKILL) when the value is released while it still runs.
public final class RunningCommand: Sendable {
    private let process: Process
    private let output = Mutex<(stdout: [String], stderr: String)>(([], ""))

    /// The path of an executable product built beside the running test bundle (SwiftPM puts both in
    /// `.build/<configuration>/`), e.g. `builtExecutable("pushworker")`.
    public static func builtExecutable(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - environment: variables set over this process's environment.
    ///   - directory: the working directory (default: this process's).
    ///   - stdin: written to the program's standard input, which is then closed (default: empty input).
    /// - Throws: what `Process.run()` throws (e.g. the executable does not exist).
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, stdin: Data? = nil) throws {
        let process = Process()
        process.executableURL = executable
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

    /// The complete stdout lines so far (without their newlines).
    public var stdoutLines: [String] { output.withLock { $0.stdout } }
    /// Everything written to stderr so far.
    public var stderr: String { output.withLock { $0.stderr } }
    /// The process id.
    public var pid: Int32 { process.processIdentifier }
    /// Whether the process is still running.
    public var isRunning: Bool { process.isRunning }
    /// The signal that ended the process (e.g. `SIGTERM` when it did not catch it), or `nil` while it runs
    /// or when it exited by itself (``waitForExit(timeout:)`` returns its status).
    public var terminationSignal: Int32? {
        guard !process.isRunning, process.terminationReason == .uncaughtSignal else { return nil }
        return process.terminationStatus
    }

    /// Waits until stdout has at least `count` lines.
    /// - Returns: all stdout lines so far.
    /// - Throws: ``RunningCommandError`` if the process exits first or `timeout` passes (default 30 s),
    ///   with the end of stderr.
    public func waitForLines(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [String] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while stdoutLines.count < count {
            guard ContinuousClock.now < deadline else {
                throw RunningCommandError("\(stdoutLines.count) of \(count) stdout lines within \(timeout); stderr: \(stderr.suffix(2000))")
            }
            if !process.isRunning {
                try await Task.sleep(for: .milliseconds(100))  // let the reader drain the pipe
                if stdoutLines.count < count {
                    throw RunningCommandError("exited (\(process.terminationStatus)) after \(stdoutLines.count) of \(count) lines; stderr: \(stderr.suffix(2000))")
                }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return stdoutLines
    }

    /// Waits for the process to exit.
    /// - Returns: its exit status, or the number of the signal that ended it (see ``terminationSignal``).
    /// - Throws: ``RunningCommandError`` if it still runs after `timeout` (default 60 s).
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw RunningCommandError("still running after \(timeout); stderr: \(stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(50))  // let the readers drain the pipes
        // Breaks Foundation's Process reference cycle (its run loop source); returns at once, it has exited.
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends a signal, e.g. `SIGTERM` for a graceful stop.
    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Runs `executable` to completion.
    /// - Returns: the exit status, stdout lines and stderr.
    /// - Throws: ``RunningCommandError`` if it runs longer than `timeout` (default 60 s); what `init` throws.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil,
                           timeout: Duration = .seconds(60)) async throws -> (status: Int32, stdout: [String], stderr: String) {
        let command = try RunningCommand(executable, arguments, environment: environment, stdin: stdin)
        let status = try await command.waitForExit(timeout: timeout)
        return (status, command.stdoutLines, command.stderr)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        // Reaps it and breaks Foundation's Process reference cycle (see waitForExit).
        process.waitUntilExit()
    }
}

/// A child process that did not do what a test waited for, with the end of its stderr.
public struct RunningCommandError: Error, CustomStringConvertible, Sendable {
    /// What happened.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
