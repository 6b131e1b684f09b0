import Foundation
import PushWorkerCore
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
/// The program starts with `posix_spawn` (not Foundation's `Process`, whose `run()` could crash the test
/// process on Linux), in a process group of its own, with an empty signal mask, default signal actions
/// and no descriptor of the test process but its stdin, stdout and stderr pipes.
/// The process is killed (SIGKILL) when the value is released while it still runs.
public final class RunningCommand: Sendable {
    private struct Output {
        var stdout: [String] = []
        var stderr = ""
        /// How many of the two readers (stdout, stderr) have reached end of file.
        var closedStreams = 0
    }

    /// The output, shared with the reading threads (which do not hold the command itself, so releasing it
    /// kills a process that still runs).
    private final class SharedOutput: Sendable {
        let state = Mutex(Output())
        func withLock<R>(_ body: (inout Output) -> R) -> R { state.withLock { body(&$0) } }
    }

    private let child: ChildProcess
    private let output = SharedOutput()

    /// The path of an executable product built beside the running test bundle (SwiftPM puts both in
    /// `.build/<configuration>/`), e.g. `builtExecutable("pushworker")`.
    public static func builtExecutable(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - environment: variables set over this process's environment.
    ///   - directory: the working directory (default: this process's).
    ///   - stdin: written to the program's standard input (from a thread of its own), which is then closed
    ///     (default: empty input).
    /// - Throws: an error naming the executable and the reason when it cannot be started (e.g. it does not
    ///   exist or is not executable, or `directory` does not exist).
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, stdin: Data? = nil) throws {
        var env = ProcessInfo.processInfo.environment
        for (name, value) in environment { env[name] = value }
        let child = try ChildProcess(program: executable.path, arguments: arguments, environment: env, workingDirectory: directory?.path)
        self.child = child
        let input = child.stdin
        let bytes = stdin.map { [UInt8]($0) } ?? []
        Thread.detachNewThread {
            // A program that exits without reading its input must not end the test process by SIGPIPE.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            if !bytes.isEmpty { try? input?.write(bytes) }
            input?.close()
        }
        let output = output
        let out = child.stdout
        Thread.detachNewThread {
            var buffer: [UInt8] = []
            // read(upTo:) returns what the pipe holds now (at least one byte), or nothing at end of file.
            while let out, case let chunk = out.read(upTo: 16_384), !chunk.isEmpty {
                buffer.append(contentsOf: chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    output.withLock { $0.stdout.append(line) }
                }
            }
            out?.close()
            output.withLock { $0.closedStreams += 1 }
        }
        let err = child.stderr
        Thread.detachNewThread {
            while let err, case let chunk = err.read(upTo: 16_384), !chunk.isEmpty {
                let text = String(decoding: chunk, as: UTF8.self)
                output.withLock { $0.stderr += text }
            }
            err?.close()
            output.withLock { $0.closedStreams += 1 }
        }
    }

    /// The complete stdout lines so far (without their newlines).
    public var stdoutLines: [String] { output.withLock { $0.stdout } }
    /// Everything written to stderr so far.
    public var stderr: String { output.withLock { $0.stderr } }
    /// The process id (also its process group id).
    public var pid: Int32 { child.pid }
    /// Whether the process is still running.
    public var isRunning: Bool { child.isRunning }
    /// The signal that ended the process (e.g. `SIGTERM` when it did not catch it), or `nil` while it runs
    /// or when it exited by itself (``waitForExit(timeout:)`` returns its status).
    public var terminationSignal: Int32? { child.termination?.signal }

    /// Waits (up to 2 s) for the stdout and stderr readers to reach end of file once the process has
    /// exited; a program it started may still hold the pipes open, so the wait is bounded.
    private func drainPipes() async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(2))
        while output.withLock({ $0.closedStreams }) < 2 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
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
            if let termination = child.termination {
                try await drainPipes()
                if stdoutLines.count < count {
                    throw RunningCommandError("exited (\(termination)) after \(stdoutLines.count) of \(count) lines; stderr: \(stderr.suffix(2000))")
                }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return stdoutLines
    }

    /// Whether the process has a handler for `number` installed (the `SigCgt` mask of `/proc/PID/status`):
    /// a signal sent before that ends it with the default action instead.
    public func catches(_ number: Int32) -> Bool {
        guard number > 0, number <= 64, let bytes = ProcessTree.readProcFile("/proc/\(child.pid)/status") else { return false }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
              let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return mask & (UInt64(1) << UInt64(number - 1)) != 0
    }

    /// Waits until the process has a handler for `number` installed (see ``catches(_:)``), e.g. before
    /// `SIGTERM` asks `pushworker run` for a graceful stop right after its start.
    /// - Throws: ``RunningCommandError`` if the process exits first or `timeout` passes (default 30 s).
    public func waitUntilCatching(_ number: Int32, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !catches(number) {
            guard child.termination == nil else { throw RunningCommandError("exited before catching signal \(number); stderr: \(stderr.suffix(3000))") }
            guard ContinuousClock.now < deadline else { throw RunningCommandError("no handler for signal \(number) within \(timeout); stderr: \(stderr.suffix(3000))") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until stderr holds `text`, e.g. a log line that says the process is ready for a signal.
    /// - Returns: how long it waited.
    /// - Throws: ``RunningCommandError`` if the process exits first or `timeout` passes, with the end of
    ///   stderr.
    @discardableResult
    public func waitForStderr(containing text: String, timeout: Duration = .seconds(30)) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        while !stderr.contains(text) {
            guard clock.now - start < timeout else {
                throw RunningCommandError("no '\(text)' on stderr within \(timeout); stderr: \(stderr.suffix(3000))")
            }
            if child.termination != nil {
                try await drainPipes()
                if stderr.contains(text) { break }
                throw RunningCommandError("exited before '\(text)'; stderr: \(stderr.suffix(3000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return clock.now - start
    }

    /// Waits for the process to exit.
    /// - Returns: its exit status, or the number of the signal that ended it (see ``terminationSignal``);
    ///   -1 if its status could not be read.
    /// - Throws: ``RunningCommandError`` if it still runs after `timeout` (default 60 s).
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while child.isRunning {
            guard ContinuousClock.now < deadline else { throw RunningCommandError("still running after \(timeout); stderr: \(stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await drainPipes()
        switch child.termination {
        case let .exited(status): return status
        case let .signaled(signal): return signal
        case .unknown, nil: return -1
        }
    }

    /// Sends a signal, e.g. `SIGTERM` for a graceful stop (never once the process has ended and been
    /// reaped, so never to another process that got its number).
    public func signal(_ number: Int32) { child.signal(number) }

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
        // The child's own waiting thread reaps it.
        if child.isRunning { child.signal(SIGKILL) }
    }
}

/// A child process that did not do what a test waited for, with the end of its stderr.
public struct RunningCommandError: Error, CustomStringConvertible, Sendable {
    /// What happened.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
