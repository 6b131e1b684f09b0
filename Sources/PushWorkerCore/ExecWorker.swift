import Foundation
import Synchronization

/// The built-in `exec` worker (contract section 6): runs a program for each job.
///
/// - The program is started directly from `arguments` (never through a shell); a first argument without
///   `/` is looked up in `PATH`.
/// - stdin: the whole record value. Environment: pushworker's own **without** any `PUSHWORKER_*` variable
///   (so `PUSHWORKER_KAFKA_SASL_PASSWORD` and the like never reach a program) and without
///   ``withheldVariables``, plus ``environment``, `PUSHWORKER_MESSAGE_ID`, `PUSHWORKER_TYPE`,
///   `PUSHWORKER_DEADLINE_MS` (UNIX ms), `PUSHWORKER_ATTEMPT` (1 for the first run, see ``RetryPolicy``)
///   and, when present, `TRACEPARENT`.
/// - stderr: each line is logged through ``logger`` (at `info`, with `messageId`, `type` and `program`),
///   so JSON logs stay one object per line; at most ``maxOutputBytes`` per run. When the program fails
///   (a `failed` outcome, or it runs past its budget), its last stderr lines (at most 20 lines / 4 KiB) are
///   logged again at `warning`.
/// - Outcome: the first stdout line if it is `newData`, `noData` or `failed`, optionally followed by a
///   space and a reason; `retry` (optionally with a reason) is a `failed` the program marks retryable
///   (``RetryPolicy``); otherwise exit status 0 = `newData`, 75 (`EX_TEMPFAIL` of sysexits.h: "a temporary
///   failure, try again later") = `failed` / `workerError` retryable, anything else = `failed` /
///   `workerError`, with the status as detail, followed by `; stderr: ` and the program's last stderr lines
///   (at most 3 lines / 512 bytes, UTF-8, newline-separated) when it wrote any, e.g. `exit status 1; stderr:
///   ValueError: bad contentId`. stderr is awaited after the exit until it ends, up to 250 ms after the
///   last line read and 2 s in all (a program it started may hold it open).
/// - Refusal: an environment variable is a C string, so a value holding a NUL byte cannot travel whole.
///   When `PUSHWORKER_MESSAGE_ID` (the `apns-id`), `PUSHWORKER_TYPE` (the payload's `type`, e.g.
///   `"ok\u0000evil"` routed to a default exec worker) or `TRACEPARENT` (the `traceparent` header; also
///   when it is not UTF-8) cannot carry its value, the program is not started and the outcome is `failed` /
///   `invalidPayload` with a detail naming the field and the variable (``environmentProblem(for:)``).
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
    /// Variables of pushworker's environment the program does not inherit, beside every `PUSHWORKER_*`
    /// one (e.g. the variables http workers read their secret headers from).
    public var withheldVariables: Set<String>
    /// Where the program's stderr lines go.
    public var logger: PushWorkerLogger
    /// The most stdout bytes read, and the most stderr bytes logged, per run (64 KiB); more are discarded.
    public static let maxOutputBytes = 65_536

    /// Creates an exec worker.
    /// - Parameters:
    ///   - arguments: the program and its arguments (at least one element).
    ///   - environment: extra environment variables.
    ///   - workingDirectory: the working directory, or `nil`.
    ///   - terminationGrace: the wait between SIGTERM and SIGKILL (default 2 s).
    ///   - withheldVariables: variables not inherited, beside every `PUSHWORKER_*` one (default none).
    ///   - logger: where the program's stderr lines go (default label `pushworker.exec`).
    public init(
        arguments: [String], environment: [String: String] = [:], workingDirectory: String? = nil, terminationGrace: Duration = .seconds(2),
        withheldVariables: Set<String> = [], logger: PushWorkerLogger = PushWorkerLogger(label: "pushworker.exec")
    ) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.terminationGrace = terminationGrace
        self.withheldVariables = withheldVariables
        self.logger = logger
    }

    /// The program's environment: pushworker's own without `PUSHWORKER_*` variables and
    /// ``withheldVariables``, then ``environment``, then the job's variables.
    func programEnvironment(for job: Job, inherited: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var env = inherited.filter { !$0.key.hasPrefix("PUSHWORKER_") && !withheldVariables.contains($0.key) }
        for (name, value) in environment { env[name] = value }
        env["PUSHWORKER_MESSAGE_ID"] = job.messageId
        env["PUSHWORKER_TYPE"] = job.type ?? ""
        env["PUSHWORKER_DEADLINE_MS"] = String(job.deadlineMs)
        env["PUSHWORKER_ATTEMPT"] = String(job.attempt)
        // W3C trace context of the record (the TRACEPARENT variable OpenTelemetry SDKs read); unset when the
        // record has none, so the service's own environment never leaks in.
        env["TRACEPARENT"] = job.traceparent
        return env
    }

    /// Why `job` cannot be handed to a program whole, or `nil`: a value of the program's environment that
    /// holds a NUL byte (C strings end there, so the program would see it cut), or a `traceparent` header
    /// that is not UTF-8 (the environment is passed to the program as text).
    public static func environmentProblem(for job: Job) -> String? {
        if job.messageId.utf8.contains(0) {
            return "the apns-id header holds a NUL byte, which the PUSHWORKER_MESSAGE_ID environment variable cannot carry; the program was not started"
        }
        if let type = job.type, type.utf8.contains(0) {
            return "the payload's type holds a NUL (\\u0000), which the PUSHWORKER_TYPE environment variable cannot carry; the program was not started"
        }
        if let traceparent = job.traceparentHeader {
            if traceparent.contains(0) {
                return "the traceparent header holds a NUL byte, which the TRACEPARENT environment variable cannot carry; the program was not started"
            }
            if String(validating: traceparent, as: UTF8.self) == nil {
                return "the traceparent header is not UTF-8, which the TRACEPARENT environment variable cannot carry; the program was not started"
            }
        }
        return nil
    }

    /// An exec worker failure before the program ran.
    public struct LaunchError: Error, CustomStringConvertible {
        /// Why it failed.
        public var description: String
    }

    /// Finds `program` in `PATH` (or returns it as is when it contains `/`).
    public static func resolve(_ program: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        ChildProcess.resolve(program, path: path)
    }

    /// Runs the program with the record value on stdin; the outcome follows contract section 6 (exec).
    /// A job whose values its environment cannot carry is `failed` / `invalidPayload` without starting the
    /// program (``environmentProblem(for:)``).
    /// - Throws: an error when the program cannot be started (reported as `failed` / `workerError`).
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        if let problem = Self.environmentProblem(for: job) {
            return .failed(.invalidPayload, detail: problem)
        }
        guard let program = arguments.first, let path = Self.resolve(program) else {
            throw LaunchError(description: "exec worker: program '\(arguments.first ?? "")' not found or not executable")
        }
        guard let loop = ProcessEventLoop.shared else {
            throw LaunchError(description: "exec worker: the process event loop could not start (epoll_create1 or eventfd failed)")
        }
        try Task.checkCancellation()
        // Programs start one at a time on ProgramStarter's queue (posix_spawn blocks until the program is
        // exec'd, and copies this process's descriptor table: milliseconds with thousands of programs running).
        // Everything after it waits on the ProcessEventLoop's one thread, not a thread per program: the
        // program's exit (its pidfd), its stdin, stdout and stderr, and the kill after the grace.
        // The program starts in a process group of its own, with an empty signal mask and default signal
        // actions (ChildProcess), whatever this thread blocks and pushworker catches.
        let child = try await start(path, job: job)
        let run = ProcessRun()
        let tail = StderrTail()
        let metadata = ["messageId": job.messageId, "type": job.type ?? "", "program": program]
        if let stderr = child.stderr {
            let lines = StderrLines(logger: logger, metadata: metadata, tail: tail)
            loop.readToEnd(stderr, onData: { lines.add($0) }, onEnd: {
                lines.finish()
                tail.close()
            })
        } else {
            tail.close()
        }
        if let input = child.stdin { loop.writeAll(Array(job.value), to: input) }
        if let stdout = child.stdout {
            let collected = BoundedOutput(limit: Self.maxOutputBytes)
            loop.readToEnd(stdout, onData: { collected.append($0) }, onEnd: { run.finish(output: collected.data) })
        } else {
            run.finish(output: Data())
        }
        let grace = terminationGrace
        let (status, signaled, output) = await withTaskCancellationHandler {
            let termination = await child.waitForExit()
            switch termination {
            case let .exited(status): run.finish(status: status, signaled: false)
            case let .signaled(signal): run.finish(status: signal, signaled: true)
            case .unknown: run.finish(status: -1, signaled: false)
            }
            return await run.wait()
        } onCancel: {
            // The program leads its own process group: signal the whole group, so that programs it
            // started stop too. Its descendants that left the group (setsid) are found in /proc first (once
            // the program has died they belong to init), on the loop's thread, and signalled alike.
            loop.after(.zero) {
                let strays = child.isRunning ? ProcessTree.descendants(of: child.pid).filter { $0.processGroup != child.pid } : []
                child.signalGroup(SIGTERM)
                for stray in strays { ProcessTree.signal(stray, SIGTERM) }
                loop.after(grace) {
                    child.signalGroup(SIGKILL)
                    // Only while the program is not reaped (its pid still names it): the reaping runs on
                    // this thread too, so it cannot happen in between.
                    let later = child.isRunning ? ProcessTree.descendants(of: child.pid).filter { $0.processGroup != child.pid } : []
                    for stray in strays + later.filter({ !strays.contains($0) }) { ProcessTree.signal(stray, SIGKILL) }
                }
            }
        }
        if Task.isCancelled {
            await tail.waitForEnd(atMost: Self.stderrWait)
            Self.logFailure(tail, outcome: "ran past its budget (SIGTERM sent)", logger: logger, metadata: metadata)
            throw CancellationError()
        }
        var outcome = Self.outcome(status: status, signaled: signaled, stdout: output)
        guard outcome.result == .failed else { return outcome }
        await tail.waitForEnd(idle: Self.stderrWait, atMost: Self.stderrWaitLimit)
        // A crash (no result word on stdout): the status, then the last stderr lines (a traceback's end).
        if let detail = outcome.detail, detail.hasPrefix("exit status") || detail.hasPrefix("killed by signal"), let stderr = tail.detail {
            outcome.detail = "\(detail); stderr: \(stderr)"
        }
        Self.logFailure(tail, outcome: outcome.detail ?? "failed", logger: logger, metadata: metadata)
        return outcome
    }

    /// Starts the program. When this process has no descriptor left for its pipes (`EMFILE`, `ENFILE`: many
    /// programs running at once against `RLIMIT_NOFILE`), it waits for running programs to end and tries
    /// again every 20 ms until the job's deadline, instead of failing the job.
    private func start(_ path: String, job: Job) async throws -> ChildProcess {
        let programArguments = Array(arguments.dropFirst())
        let environment = programEnvironment(for: job)
        let workingDirectory = workingDirectory
        while true {
            do {
                return try await ProgramStarter.start {
                    try ChildProcess(program: path, arguments: programArguments, environment: environment, workingDirectory: workingDirectory)
                }
            } catch let error as ChildProcessError where error.errorNumber == EMFILE || error.errorNumber == ENFILE {
                if Self.descriptorWarning.due() {
                    logger.warning("no file descriptor left for a program's pipes: programs wait for running ones to end (raise the open-file limit, e.g. systemd LimitNOFILE, or lower maxInFlight)",
                                   metadata: ["program": arguments.first ?? "", "error": "\(error)"])
                }
                try await Task.sleep(for: .milliseconds(20))
            } catch let error as ChildProcessError {
                throw LaunchError(description: "exec worker: \(error)")
            }
        }
    }

    /// At most one warning about exhausted descriptors every 10 s, for the whole process.
    static let descriptorWarning = RateLimit(every: .seconds(10))

    /// How long a finished program's stderr may stay open (held by a program it started) before its result
    /// is reported with the stderr lines read so far.
    static let stderrWait: Duration = .milliseconds(250)
    /// The longest a failed program's result waits for its stderr while lines are still being read: 2 s.
    static let stderrWaitLimit: Duration = .seconds(2)

    /// Logs the kept stderr lines of a failed program again, at `warning` (they were logged at `info` as they
    /// came), so that a service logging at `warning` shows why it failed.
    static func logFailure(_ tail: StderrTail, outcome: String, logger: PushWorkerLogger, metadata: [String: String]) {
        var metadata = metadata
        metadata["outcome"] = outcome
        for line in tail.lines { logger.warning("stderr of a failed program: \(line)", metadata: metadata) }
    }

    /// The first stdout line's word that marks a `failed` outcome retryable: `retry`.
    public static let retryWord = "retry"
    /// The exit status that marks a `failed` outcome retryable: 75, `EX_TEMPFAIL` in sysexits.h.
    public static let temporaryFailureStatus: Int32 = 75

    /// Maps a finished program to an outcome (contract section 6, exec).
    public static func outcome(status: Int32, signaled: Bool, stdout: Data) -> WorkerOutcome {
        let firstLine = stdout.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first.map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        } ?? ""
        // Split at the first space byte, not the first " " Character: a space followed by a combining mark
        // is one Character, which hid the result word (`failed \u{347}x` was read as no result).
        let parts = firstLine.utf8.split(separator: 0x20, maxSplits: 1, omittingEmptySubsequences: false)
        if let word = parts.first.map({ String(decoding: $0, as: UTF8.self) }) {
            let reason = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self).trimmingCharacters(in: .whitespaces) : ""
            if let result = BackgroundFetchResult(rawValue: word) {
                return WorkerOutcome(result, reason: reason.isEmpty ? nil : ResultReason(reason))
            }
            if word == Self.retryWord {
                return .failed(reason.isEmpty ? .workerError : ResultReason(reason), detail: "the program asked for a retry", retryable: true)
            }
        }
        if !signaled && status == 0 { return .newData }
        if !signaled && status == Self.temporaryFailureStatus {
            return .failed(.workerError, detail: "exit status \(status) (EX_TEMPFAIL: a temporary failure)", retryable: true)
        }
        return .failed(.workerError, detail: signaled ? "killed by signal \(status)" : "exit status \(status)")
    }
}

/// Joins an exec worker's two ends: the program's exit and the end of its stdout.
///
/// Everything passes through its lock, never through a continuation's value alone: a continuation resumed on
/// the event loop's thread and run on the cooperative pool carries no happens-before edge that
/// ThreadSanitizer sees.
final class ProcessRun: Sendable {
    private struct State {
        var status: (Int32, Bool)?
        var output: Data?
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func finish(status: Int32, signaled: Bool) { update { $0.status = (status, signaled) } }
    func finish(output: Data) { update { $0.output = output } }

    /// Waits for both ends, then reads them under the lock.
    func wait() async -> (Int32, Bool, Data) {
        await withCheckedContinuation { continuation in
            update { $0.waiter = continuation }
        }
        return state.withLock { state in
            (state.status?.0 ?? -1, state.status?.1 ?? false, state.output ?? Data())
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> CheckedContinuation<Void, Never>? in
            change(&state)
            guard state.status != nil, state.output != nil, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        ready?.resume()
    }
}
