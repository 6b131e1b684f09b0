import Synchronization

/// How one worker run ended, with its timings.
public struct ExecutionReport: Sendable {
    /// The outcome: the worker's, `failed`/`workerError` if it threw, `failed`/`timeout` at the deadline.
    public var outcome: WorkerOutcome
    /// When the worker started, UNIX milliseconds.
    public var startedAtMs: Int64
    /// When the outcome was decided, UNIX milliseconds.
    public var finishedAtMs: Int64
    /// The run time in milliseconds, from the monotonic clock (the budget at a timeout).
    public var durationMs: Double
    /// Whether the budget ran out.
    public var timedOut: Bool
}

/// Something that happened to a worker run under its budget, told to the executor's observer.
public enum BudgetEvent: Sendable, Equatable {
    /// The run reached its deadline: its task was cancelled and `failed`/`timeout` reported.
    case timedOut(type: String?, worker: String)
    /// The worker was still running ``BudgetedExecutor/cancellationGrace`` after its deadline, or finished
    /// later than that: it ignores cancellation. Told once per run, as soon as it is known (a worker that
    /// never returns is counted too).
    case ignoredCancellation(type: String?, worker: String)
}

/// Runs workers under their budget (contract section 2, rows 6–8).
///
/// The budget counts from the moment the worker starts. At the deadline the worker's task is cancelled and
/// `failed`/`timeout` is reported at once, whether or not the worker stops; a worker still running
/// ``cancellationGrace`` after its deadline is logged as ignoring cancellation and counted in
/// ``ignoredCancellationCount`` (once per run, whether or not it ever returns). A worker that throws at its
/// deadline (within 20 ms before it, or after) — typically an I/O timeout sized from `Job.remaining` firing
/// just before the deadline timer — is reported as `timeout` too, not `workerError`.
public final class BudgetedExecutor: Sendable {
    private let timer = DeadlineTimer()
    private let logger: Logger
    private let counters = Counters()
    private let observer: (@Sendable (BudgetEvent) -> Void)?
    /// ``cancellationGrace``, or a longer one in tests that run on a loaded machine.
    private let grace: Duration

    private final class Counters: Sendable {
        let ignoredCancellations = Atomic<Int>(0)
        let timeouts = Atomic<Int>(0)
    }

    /// How long a cancelled worker may go on after its deadline before it counts as ignoring cancellation:
    /// 1 s. (Long enough that a cooperating worker whose task waits for a busy thread pool is not counted;
    /// short enough to flag a worker that goes on working.)
    public static let cancellationGrace: Duration = .seconds(1)

    /// Creates an executor with its deadline thread.
    /// - Parameters:
    ///   - logger: where timeouts and ignored cancellations are logged (warning).
    ///   - observer: told of each ``BudgetEvent`` (for metrics), on the deadline thread or the worker's
    ///     task. Keep it short; default none.
    public init(logger: Logger = Logger(label: "pushworker.executor"), observer: (@Sendable (BudgetEvent) -> Void)? = nil) {
        self.logger = logger
        self.observer = observer
        self.grace = Self.cancellationGrace
    }

    /// An executor with another cancellation grace (tests).
    init(cancellationGrace: Duration) {
        self.logger = Logger(label: "pushworker.executor")
        self.observer = nil
        self.grace = cancellationGrace
    }

    deinit { timer.stop() }

    /// Workers that were still running ``cancellationGrace`` past their deadline (they ignored
    /// cancellation), counted once per run.
    public var ignoredCancellationCount: Int { counters.ignoredCancellations.load(ordering: .relaxed) }
    /// Runs that reached their deadline.
    public var timeoutCount: Int { counters.timeouts.load(ordering: .relaxed) }
    /// How long ago the deadline thread last looked for due deadlines (at least every 500 ms when all is
    /// well), or `nil` once it has ended. A large value means a completion handler blocks that thread.
    public var sinceDeadlineTimerRound: Duration? { timer.sinceLastRound }

    /// Starts `job` on `registered.worker` now, under `registered.budget`, and calls `completion` exactly
    /// once: with the worker's outcome, or at the deadline with `failed`/`timeout`.
    public func run(_ job: Job, on registered: RegisteredWorker, completion: @escaping @Sendable (ExecutionReport) -> Void) {
        var started = job
        let start = ContinuousClock.now
        let startedAtMs = Clock.nowMs()
        started.start(budget: registered.budget, at: start)
        let job = started
        let run = WorkerRun()
        let budget = registered.budget
        let deadline = job.deadline
        let grace = self.grace
        let ignoredCancellation: @Sendable (_ stillRunning: Bool, _ lateMs: Double) -> Void = { [logger, counters, observer] stillRunning, lateMs in
            counters.ignoredCancellations.add(1, ordering: .relaxed)
            observer?(.ignoredCancellation(type: job.type, worker: registered.name))
            logger.warning(stillRunning ? "worker ignores cancellation: still running after its deadline" : "worker ignored cancellation: it finished after its deadline", metadata: [
                "messageId": job.messageId, "type": job.type ?? "", "worker": registered.name, "lateMs": Self.format(lateMs),
                "topic": job.source.topic, "partition": String(job.source.partition), "offset": String(job.source.offset),
            ])
        }
        // Reports `timeout` for a run whose outcome the caller has just claimed.
        let reportTimeout: @Sendable () -> Void = { [timer, logger, counters, observer] in
            counters.timeouts.add(1, ordering: .relaxed)
            observer?(.timedOut(type: job.type, worker: registered.name))
            let budgetMs = Self.milliseconds(budget)
            logger.warning("worker ran past its budget; cancelled", metadata: [
                "messageId": job.messageId, "type": job.type ?? "", "worker": registered.name, "budgetMs": Self.format(budgetMs),
                "topic": job.source.topic, "partition": String(job.source.partition), "offset": String(job.source.offset),
            ])
            // A worker still running a moment from now ignores cancellation: count it then, even if it never
            // returns. (Every entry of the grace list is scheduled `cancellationGrace` from now, so the list
            // stays in deadline order.)
            _ = timer.schedule(at: .now.advanced(by: grace), budget: grace) {
                if run.isRunning && run.flagIgnoredCancellation() {
                    ignoredCancellation(true, Self.milliseconds(deadline.duration(to: .now)))
                }
            }
            completion(ExecutionReport(
                outcome: .failed(.timeout, detail: "the worker ran past its budget of \(Self.format(budgetMs)) ms"),
                startedAtMs: startedAtMs, finishedAtMs: Clock.nowMs(), durationMs: budgetMs, timedOut: true))
        }
        let entry = timer.schedule(at: deadline, budget: budget) {
            guard run.claim() else { return }
            run.cancel()
            reportTimeout()
        }
        let task = Task { [timer] in
            let outcome: WorkerOutcome
            do {
                outcome = try await registered.worker.perform(job)
            } catch {
                // An error at the deadline (an I/O timeout sized from `job.remaining`, a cancellation) is the
                // budget running out: the deadline wins and the result is `timeout`.
                if ContinuousClock.now >= deadline - Self.deadlineTolerance {
                    run.markFinished()
                    if run.claim() {
                        timer.cancel(entry)
                        reportTimeout()
                    }
                    return
                }
                outcome = .failed(.workerError, detail: String(describing: error))
            }
            let end = ContinuousClock.now
            run.markFinished()
            if run.claim() {
                timer.cancel(entry)
                completion(ExecutionReport(
                    outcome: outcome, startedAtMs: startedAtMs, finishedAtMs: Clock.nowMs(),
                    durationMs: Self.milliseconds(start.duration(to: end)), timedOut: false))
            } else if deadline.duration(to: end) > grace && run.flagIgnoredCancellation() {
                // Finished past the grace before the grace check ran (a busy deadline thread).
                ignoredCancellation(false, Self.milliseconds(deadline.duration(to: end)))
            }
        }
        run.attach(task)
    }

    /// Runs `job` like ``run(_:on:completion:)`` and returns the report.
    public func run(_ job: Job, on registered: RegisteredWorker) async -> ExecutionReport {
        await withCheckedContinuation { continuation in
            run(job, on: registered) { continuation.resume(returning: $0) }
        }
    }

    /// How close to its deadline a worker's error counts as the budget running out (20 ms: timer slack).
    static let deadlineTolerance = Duration.milliseconds(20)

    static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    static func format(_ ms: Double) -> String { ResultRecord.formatDuration(ms) }
}

/// One worker run: who decides its outcome (the worker or the deadline) and its task, for cancellation.
final class WorkerRun: Sendable {
    private struct State {
        var claimed = false
        var cancelled = false
        var finished = false
        var ignoredCancellationCounted = false
        var task: Task<Void, Never>?
    }
    private let state = Mutex(State())

    /// The worker returned (or threw).
    func markFinished() { state.withLock { $0.finished = true } }

    /// Whether the worker has not returned yet.
    var isRunning: Bool { state.withLock { !$0.finished } }

    /// Returns true to the first caller only: the run is counted as ignoring cancellation once.
    func flagIgnoredCancellation() -> Bool {
        state.withLock { state in
            if state.ignoredCancellationCounted { return false }
            state.ignoredCancellationCounted = true
            return true
        }
    }

    /// Returns true to the first caller only.
    func claim() -> Bool {
        state.withLock { state in
            if state.claimed { return false }
            state.claimed = true
            return true
        }
    }

    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            if !state.claimed { state.task = task }
            return false
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }
}
