import Foundation
import Synchronization

/// The built-in `exec` worker (contract section 6): runs a program for each job.
///
/// - The program is started directly from `arguments` (never through a shell); a first argument without
///   `/` is looked up in `PATH`.
/// - stdin: the whole record value. Environment: pushworker's own, plus `PUSHWORKER_MESSAGE_ID`,
///   `PUSHWORKER_TYPE`, `PUSHWORKER_DEADLINE_MS` (UNIX ms) and, when present, `TRACEPARENT`.
/// - Outcome: the first stdout line if it is `newData`, `noData` or `failed`, optionally followed by a
///   space and a reason; otherwise exit status 0 = `newData`, anything else = `failed` / `workerError`
///   with the status as detail.
/// - At the deadline (task cancellation): SIGTERM, then SIGKILL after ``terminationGrace``, to the
///   program's process group (the program and the programs it started).
public struct ExecWorker: Worker {
    /// The program and its arguments; `arguments[0]` is the program.
    public var arguments: [String]
    /// Extra environment variables for the program.
    public var environment: [String: String]
    /// The working directory, or `nil` for pushworker's.
    public var workingDirectory: String?
    /// The wait between SIGTERM and SIGKILL once the budget runs out (default 2 s).
    public var terminationGrace: Duration
    /// The most stdout bytes read (default 64 KiB); more are discarded.
    public static let maxOutputBytes = 65_536

    /// Creates an exec worker.
    /// - Parameters:
    ///   - arguments: the program and its arguments (at least one element).
    ///   - environment: extra environment variables.
    ///   - workingDirectory: the working directory, or `nil`.
    ///   - terminationGrace: the wait between SIGTERM and SIGKILL (default 2 s).
    public init(arguments: [String], environment: [String: String] = [:], workingDirectory: String? = nil, terminationGrace: Duration = .seconds(2)) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.terminationGrace = terminationGrace
    }

    /// An exec worker failure before the program ran.
    public struct LaunchError: Error, CustomStringConvertible {
        /// Why it failed.
        public var description: String
    }

    /// Finds `program` in `PATH` (or returns it as is when it contains `/`).
    public static func resolve(_ program: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs the program with the record value on stdin; the outcome follows contract section 6 (exec).
    /// - Throws: an error when the program cannot be started (reported as `failed` / `workerError`).
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        guard let program = arguments.first, let path = Self.resolve(program) else {
            throw LaunchError(description: "exec worker: program '\(arguments.first ?? "")' not found or not executable")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = Array(arguments.dropFirst())
        var env = ProcessInfo.processInfo.environment
        for (name, value) in environment { env[name] = value }
        env["PUSHWORKER_MESSAGE_ID"] = job.messageId
        env["PUSHWORKER_TYPE"] = job.type ?? ""
        env["PUSHWORKER_DEADLINE_MS"] = String(job.deadlineMs)
        // W3C trace context of the record (the TRACEPARENT variable OpenTelemetry SDKs read); unset when the
        // record has none, so the service's own environment never leaks in.
        env["TRACEPARENT"] = job.traceparent
        process.environment = env
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        let run = ProcessRun()
        process.terminationHandler = { process in
            run.finish(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal)
        }
        try Task.checkCancellation()
        let value = job.value
        // Start the program and do its blocking pipe I/O on a dedicated thread, never on the cooperative
        // pool. That thread first clears its signal mask: a child inherits the mask of the thread that
        // starts it, and pushworker's pool threads block SIGTERM (signal handling), which would make the
        // program deaf to the SIGTERM it gets at its deadline.
        let launch: Result<pid_t, LaunchError> = await withCheckedContinuation { continuation in
            let io = Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                do {
                    try process.run()
                } catch {
                    continuation.resume(returning: .failure(LaunchError(description: "exec worker: cannot start \(path): \(error)")))
                    return
                }
                continuation.resume(returning: .success(process.processIdentifier))
                // A program that exits without reading stdin must not kill pushworker with SIGPIPE: block it
                // on this thread only (the write then fails with EPIPE).
                var pipeSignal = sigset_t()
                sigemptyset(&pipeSignal)
                sigaddset(&pipeSignal, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
                let input = stdin.fileHandleForWriting
                try? input.write(contentsOf: Data(value))
                try? input.close()
                var output = Data()
                let reader = stdout.fileHandleForReading
                while let chunk = try? reader.read(upToCount: 16_384), !chunk.isEmpty {
                    if output.count < Self.maxOutputBytes { output.append(chunk.prefix(Self.maxOutputBytes - output.count)) }
                }
                try? reader.close()
                run.finish(output: output)
            }
            io.name = "pushworker-exec-io"
            io.start()
        }
        let pid = try launch.get()
        let grace = terminationGrace
        let (status, signaled, output) = await withTaskCancellationHandler {
            await run.wait()
        } onCancel: {
            // Foundation starts the program as the leader of its own process group: signal the whole
            // group, so that programs it started stop too.
            kill(-pid, SIGTERM)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18)
                kill(-pid, SIGKILL)
            }
        }
        if Task.isCancelled { throw CancellationError() }
        return Self.outcome(status: status, signaled: signaled, stdout: output)
    }

    /// Maps a finished program to an outcome (contract section 6, exec).
    public static func outcome(status: Int32, signaled: Bool, stdout: Data) -> WorkerOutcome {
        let firstLine = stdout.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first.map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        } ?? ""
        let parts = firstLine.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        if let word = parts.first, let result = BackgroundFetchResult(rawValue: String(word)) {
            let reason = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""
            return WorkerOutcome(result, reason: reason.isEmpty ? nil : ResultReason(reason))
        }
        if !signaled && status == 0 { return .newData }
        return .failed(.workerError, detail: signaled ? "killed by signal \(status)" : "exit status \(status)")
    }
}

/// Joins an exec worker's two ends: the program's exit and the end of its stdout.
final class ProcessRun: Sendable {
    private struct State {
        var status: (Int32, Bool)?
        var output: Data?
        var waiter: CheckedContinuation<(Int32, Bool, Data), Never>?
    }
    private let state = Mutex(State())

    func finish(status: Int32, signaled: Bool) { update { $0.status = (status, signaled) } }
    func finish(output: Data) { update { $0.output = output } }

    func wait() async -> (Int32, Bool, Data) {
        await withCheckedContinuation { continuation in
            update { $0.waiter = continuation }
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> (CheckedContinuation<(Int32, Bool, Data), Never>, (Int32, Bool, Data))? in
            change(&state)
            guard let (status, signaled) = state.status, let output = state.output, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, (status, signaled, output))
        }
        if let (waiter, value) = ready { waiter.resume(returning: value) }
    }
}
