import Synchronization

/// Runs workers under their budget (contract section 2, rows 6–8).
///
/// The budget counts from the moment the worker starts. At the deadline the worker's task is cancelled and
/// `failed`/`timeout` is reported at once, whether or not the worker stops; a worker still running
/// ``cancellationGrace`` after its deadline is logged as ignoring cancellation and counted in
/// ``ignoredCancellationCount`` (once per run, whether or not it ever returns). A worker that throws at its
/// deadline (within 20 ms before it, or after) — typically an I/O timeout sized from `Job.remaining` firing
/// just before the deadline timer — is reported as `timeout` too, not `workerError`.
public final class BudgetedExecutor: Sendable {
    /// What runs and their timers share; captured by them instead of the executor, so that freeing the
    /// executor stops the deadline thread even while a worker that ignores cancellation never returns.
    private let reporting: Reporting

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
    public init(logger: PushWorkerLogger = PushWorkerLogger(label: "pushworker.executor"), observer: (@Sendable (BudgetEvent) -> Void)? = nil) {
        reporting = Reporting(timer: DeadlineTimer(), logger: logger, counters: Counters(), observer: observer, grace: Self.cancellationGrace)
    }

    /// An executor with another cancellation grace (tests).
    package init(cancellationGrace: Duration) {
        reporting = Reporting(timer: DeadlineTimer(), logger: PushWorkerLogger(label: "pushworker.executor"), counters: Counters(), observer: nil, grace: cancellationGrace)
    }

    deinit { reporting.timer.stop() }

    /// Workers that were still running ``cancellationGrace`` past their deadline (they ignored
    /// cancellation), counted once per run.
    public var ignoredCancellationCount: Int { reporting.counters.ignoredCancellations.load(ordering: .relaxed) }
    /// Runs that reached their deadline.
    public var timeoutCount: Int { reporting.counters.timeouts.load(ordering: .relaxed) }
    /// How long ago the deadline thread last looked for due deadlines (at least every 500 ms when all is
    /// well), or `nil` once it has ended. A large value means a completion handler blocks that thread.
    public var sinceDeadlineTimerRound: Duration? { reporting.timer.sinceLastRound }

    /// Starts `job` on `registered.worker` now, under `registered.budget`, and calls `completion` exactly
    /// once: with the worker's outcome, or at the deadline with `failed`/`timeout`.
    public func run(_ job: Job, on registered: RegisteredWorker, completion: @escaping @Sendable (ExecutionReport) -> Void) {
        start(job, on: registered, run: WorkerRun(), completion: completion)
    }

    /// Starts `job` like ``run(_:on:completion:)``, as `run`, which ``abort(_:)`` can cut short. Does nothing
    /// if `run` was aborted already (its completion is never called).
    package func start(_ job: Job, on registered: RegisteredWorker, run: WorkerRun, completion: @escaping @Sendable (ExecutionReport) -> Void) {
        guard !run.isClaimed else { return }
        var started = job
        let start = ContinuousClock.now
        started.start(budget: registered.budget, at: start, worker: registered.name)
        // One object holds what the deadline and the worker's task share, and each closure captures it alone
        // (a closure capturing a single object reference needs no context of its own): per running job, one
        // allocation besides the task, instead of two closure contexts each holding a copy of the job.
        // It is its own deadline entry, too.
        let budgeted = BudgetedRun(job: started, registered: registered, run: run, reporting: reporting,
                                   startedAtMs: WallClock.nowMs(), completion: completion)
        let timer = reporting.timer
        timer.schedule(budgeted)
        let task = Task { await budgeted.perform() }
        if !run.attach(task, entry: budgeted) { timer.cancel(budgeted) }
    }

    /// Cuts `run` short (a fast stop): unless its outcome is already decided (the worker has returned or
    /// its deadline has passed, and its completion is being or has been called), claims it so that its
    /// completion is never called, cancels the worker's task (or, for a run not started yet, keeps it from
    /// starting) and its deadline. A worker that ignores the cancellation goes on unobserved.
    /// - Returns: true if the run was cut short (it gets no report), false if its completion is called.
    package func abort(_ run: WorkerRun) -> Bool {
        guard run.claim() else { return false }
        if let entry = run.cancel() { reporting.timer.cancel(entry) }
        return true
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

    /// One started run: the job, its worker, when it started and whom to tell. It is the run's deadline entry
    /// (``fire()`` at the job's deadline) and what its task runs.
    ///
    /// `@unchecked Sendable` (from ``DeadlineTimer/Entry``): its own stored properties are `let`s of
    /// `Sendable` types; the entry's links are the timer's, guarded by its lock.
    private final class BudgetedRun: DeadlineTimer.Entry, @unchecked Sendable {
        let job: Job
        let registered: RegisteredWorker
        let run: WorkerRun
        let reporting: Reporting
        let startedAtMs: Int64
        let completion: @Sendable (ExecutionReport) -> Void

        /// `job` has been started (``Job/start(budget:at:worker:)``): its deadline is its start plus the
        /// worker's budget.
        init(job: Job, registered: RegisteredWorker, run: WorkerRun, reporting: Reporting,
             startedAtMs: Int64, completion: @escaping @Sendable (ExecutionReport) -> Void) {
            self.job = job
            self.registered = registered
            self.run = run
            self.reporting = reporting
            self.startedAtMs = startedAtMs
            self.completion = completion
            super.init(deadline: job.deadline, budget: registered.budget)
        }

        /// When the worker started: the deadline less the budget (kept as the deadline alone, 16 bytes less
        /// per running job).
        var start: ContinuousClock.Instant { deadline - budget }

        /// The deadline fired (on the deadline thread).
        override func fire() { deadlineReached() }

        /// Unless the worker returned first, cancels it and reports `timeout`.
        func deadlineReached() {
            guard run.claim() else { return }
            run.cancel()
            reporting.reportTimeout(job, on: registered, run: run, startedAtMs: startedAtMs, completion: completion)
        }

        /// Runs the worker (the run's task) and reports its outcome unless the deadline has claimed it.
        ///
        /// Kept to the one `await`, with what happens after it in synchronous methods: what is live across
        /// the await is what the task allocates for this frame, and a task whose frames fit in its allocator's
        /// first slab (about 1000 bytes) needs no second 1 KB slab.
        @inline(never)
        func perform() async {
            do {
                returned(try await registered.worker.perform(job))
            } catch {
                threw(error)
            }
        }

        /// The worker returned `outcome`.
        private func returned(_ outcome: WorkerOutcome) {
            let end = ContinuousClock.now
            if run.finishAndClaim() {
                reporting.timer.cancel(self)
                completion(ExecutionReport(
                    outcome: outcome, startedAtMs: startedAtMs, finishedAtMs: WallClock.nowMs(),
                    durationMs: BudgetedExecutor.milliseconds(start.duration(to: end)), timedOut: false))
            } else if job.deadline.duration(to: end) > reporting.grace && run.flagIgnoredCancellation() {
                // Finished past the grace before the grace check ran (a busy deadline thread).
                reporting.ignoredCancellation(job, on: registered, stillRunning: false, lateMs: BudgetedExecutor.milliseconds(job.deadline.duration(to: end)))
            }
        }

        /// The worker threw `error`.
        private func threw(_ error: any Error) {
            // An error at the deadline (an I/O timeout sized from `job.remaining`, a cancellation) is the
            // budget running out: the deadline wins and the result is `timeout`.
            if ContinuousClock.now >= job.deadline - BudgetedExecutor.deadlineTolerance {
                if run.finishAndClaim() {
                    reporting.timer.cancel(self)
                    reporting.reportTimeout(job, on: registered, run: run, startedAtMs: startedAtMs, completion: completion)
                }
                return
            }
            // A ``RetryableError`` says the failure may pass: the job runs again as its policy says.
            returned(.failed(.workerError, detail: String(describing: error), retryable: error is any RetryableError))
        }
    }

    /// The deadline timer, counters, observer and logger, and what a run reports through them when its
    /// budget runs out.
    ///
    /// A class: every ``BudgetedRun`` refers to the executor's one instance instead of holding a copy.
    private final class Reporting: Sendable {
        let timer: DeadlineTimer
        let logger: PushWorkerLogger
        let counters: Counters
        let observer: (@Sendable (BudgetEvent) -> Void)?
        /// ``BudgetedExecutor/cancellationGrace``, or a longer one in tests that run on a loaded machine.
        let grace: Duration

        init(timer: DeadlineTimer, logger: PushWorkerLogger, counters: Counters, observer: (@Sendable (BudgetEvent) -> Void)?, grace: Duration) {
            self.timer = timer
            self.logger = logger
            self.counters = counters
            self.observer = observer
            self.grace = grace
        }

        /// Reports `timeout` for a run whose outcome the caller has just claimed, and schedules the check for
        /// a worker that ignores its cancellation.
        func reportTimeout(
            _ job: Job, on registered: RegisteredWorker, run: WorkerRun, startedAtMs: Int64,
            completion: @Sendable (ExecutionReport) -> Void
        ) {
            counters.timeouts.add(1, ordering: .relaxed)
            observer?(.timedOut(type: job.type, worker: registered.name))
            let budgetMs = BudgetedExecutor.milliseconds(registered.budget)
            logger.warning("worker ran past its budget; cancelled", metadata: [
                "messageId": job.messageId, "type": job.type ?? "", "worker": registered.name, "budgetMs": BudgetedExecutor.format(budgetMs),
                "topic": job.source.topic, "partition": String(job.source.partition), "offset": String(job.source.offset),
            ])
            // A worker still running a moment from now ignores cancellation: count it then, even if it never
            // returns. (Every entry of the grace list is scheduled `cancellationGrace` from now, so the list
            // stays in deadline order.)
            let deadline = job.deadline
            _ = timer.schedule(at: .now.advanced(by: grace), budget: grace) {
                if run.isRunning && run.flagIgnoredCancellation() {
                    self.ignoredCancellation(job, on: registered, stillRunning: true, lateMs: BudgetedExecutor.milliseconds(deadline.duration(to: .now)))
                }
            }
            completion(ExecutionReport(
                outcome: .failed(.timeout, detail: "the worker ran past its budget of \(BudgetedExecutor.format(budgetMs)) ms"),
                startedAtMs: startedAtMs, finishedAtMs: WallClock.nowMs(), durationMs: budgetMs, timedOut: true))
        }

        /// Counts and logs a run that went on past its deadline's cancellation grace.
        func ignoredCancellation(_ job: Job, on registered: RegisteredWorker, stillRunning: Bool, lateMs: Double) {
            counters.ignoredCancellations.add(1, ordering: .relaxed)
            observer?(.ignoredCancellation(type: job.type, worker: registered.name))
            logger.warning(stillRunning ? "worker ignores cancellation: still running after its deadline" : "worker ignored cancellation: it finished after its deadline", metadata: [
                "messageId": job.messageId, "type": job.type ?? "", "worker": registered.name, "lateMs": BudgetedExecutor.format(lateMs),
                "topic": job.source.topic, "partition": String(job.source.partition), "offset": String(job.source.offset),
            ])
        }

    }
}
