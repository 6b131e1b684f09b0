import Dispatch
import Synchronization

/// Turns input records into results: validates them (contract section 2, rows 1–5), routes each by its
/// `type`, and runs workers under their budgets with a bound on jobs in flight and same-key ordering.
///
/// - Records with the same key run one after another, in submission (offset) order; records with
///   different keys, or none, may run in parallel.
/// - At most `maxInFlight` workers run at once, and at most `maxConcurrent` of one worker when its
///   registration sets it; the rest wait, and their budget has not started. Waiting jobs start by
///   partition in turn (``FairQueue``): a partition's records never wait behind another partition's
///   backlog, only behind their own partition's earlier records and one of each other partition's.
/// - Every submitted record yields exactly one ``DispatcherOutput`` through `onOutput` (`onResult` for the
///   initializer without a retry topic), with the ``InputRecord`` it answers (for a dead-letter or retry
///   copy): its ``ResultRecord``, or a ``Forward`` to the retry topic; unless it is taken back with
///   ``discardWaiting(where:)`` before its worker starts, or cut short by ``stopNow()`` or ``cutShort(where:)``.
/// - Retries (with a ``DelaySettings/retryTopic``): a `failed` outcome that its worker's ``RetryPolicy``
///   retries yields its result with ``ResultRecord/willRetry`` and a ``RetryRequest``; the jobs of its key
///   queued behind it, and the key's later records while the key is parked, are forwarded behind it
///   (``Forward/Kind/follower``), so the key's records keep their order.
/// - Times (`pushworker-not-before`, a retry's backoff): a job whose time has not come is held in memory
///   when due within ``DelaySettings/maxHold`` (a retry holding its key), else forwarded to the retry topic
///   (a scheduled push never holds its key). Its `apns-expiration` is checked again when it starts.
/// - Collapse (on unless `collapse` is false): a record with a key and an `apns-collapse-id` that arrives
///   while an older record with the same key and collapse id waits (not started) replaces it: the older one
///   gets `noData` / `collapsed` at once and the newer one waits at the back of the key's line, so the key's
///   records still run in offset order. A running job is never collapsed; records without a key never are
///   (the key plays the part of APNs's device token).
/// - Dedupe (when `dedupe` is set): a record repeating the `apns-id` of one taken within the window gets
///   `noData` / `duplicate` naming the first (``DedupeConfiguration`` says what counts as a repeat).
///
/// `onOutput` is called on the submitting thread for records rejected before routing, duplicates,
/// collapsed and forwarded records, on the executor's threads for worker results and their followers,
/// and on the delay timer's queue for held records whose time came. It must not block. One exception
/// keeps a key's order: a record of a parked key forwarded while the retry that parked it is still being
/// handed over is handed over after it, by the thread handing it over (an executor's thread).
///
/// Records without `apns-collapse-id` (or without a key) and, with dedupe off, all records cost nothing
/// extra: the collapse index and the dedupe window are only touched for records that carry the headers.
public final class JobDispatcher: Sendable {
    /// A routed job waiting for, or holding, a slot.
    /// A routed job as the dispatcher moves it between its queues: what never changes once it is routed
    /// lives in one shared ``Core`` (so moving a job copies three words, not a dozen strings and arrays),
    /// what the dispatcher changes under its lock (``ticket``, ``run``, ``waited``) lives inline.
    struct Pending: Sendable {
        /// What a routed job carries and never changes. Immutable and made of `Sendable` values, so it is
        /// `Sendable` itself.
        final class Core: Sendable {
            let job: Job
            let worker: RegisteredWorker
            let receivedAtMs: Int64
            /// The input's `apns-id` header bytes, for the result's headers.
            let apnsIdHeader: [UInt8]?
            /// The key and `apns-collapse-id` when the job may be collapsed, else `nil`.
            let collapseKey: CollapseKey?
            /// The `apns-id` admitted to the dedupe window (forgotten again if the run fails), else `nil`.
            let dedupeId: [UInt8]?
            /// Not before this time (nanoseconds since the dispatcher's clock origin) may the job start, or
            /// `nil`: from its `pushworker-not-before` (a scheduled push, a retry).
            let dueNs: Int64?
            /// The `pushworker-not-before` time (UNIX ms), or `nil`.
            let notBeforeMs: Int64?
            /// Whether it waits holding its key (a retry read from the retry topic: the key's later records
            /// wait behind it); a scheduled push waits without its key.
            let holdsKey: Bool
            /// Where the record was first read (its position, or the one it carried into the retry topic).
            let origin: RecordSource
            /// The input's `apns-expiration` header bytes, for the check before a held job starts.
            let apnsExpiration: [UInt8]?

            init(job: Job, worker: RegisteredWorker, receivedAtMs: Int64, apnsIdHeader: [UInt8]?, collapseKey: CollapseKey?,
                 dedupeId: [UInt8]?, dueNs: Int64?, notBeforeMs: Int64?, holdsKey: Bool, origin: RecordSource, apnsExpiration: [UInt8]?) {
                self.job = job
                self.worker = worker
                self.receivedAtMs = receivedAtMs
                self.apnsIdHeader = apnsIdHeader
                self.collapseKey = collapseKey
                self.dedupeId = dedupeId
                self.dueNs = dueNs
                self.notBeforeMs = notBeforeMs
                self.holdsKey = holdsKey
                self.origin = origin
                self.apnsExpiration = apnsExpiration
            }
        }

        let core: Core
        /// Tells a collapsible job from others with its ``collapseKey``: given when it starts waiting, 0
        /// for jobs that never wait collapsibly.
        var ticket: UInt64 = 0
        /// The run, made when the job takes its slot (so that ``JobDispatcher/stopNow()`` can cut it short
        /// even before its worker starts).
        var run: WorkerRun?
        /// Whether it waited for its time (held): its `apns-expiration` is checked again when it starts.
        var waited = false
        /// Whether it was read from the retry topic (and that read is not yet counted against its key's
        /// parking: a scheduled push placed again when its time comes is not).
        var fromRetryTopic: Bool
        /// A scheduled push read back from the retry topic (kept when it is placed again after a hold).
        var readBack = false
        /// Whether it was held ``DelaySettings/maxHold`` after it was read back still not due within it:
        /// the next placement writes it back (`requeued`) instead of holding it again.
        var heldBeforeRequeue = false

        init(_ core: Core, fromRetryTopic: Bool) {
            self.core = core
            self.fromRetryTopic = fromRetryTopic
        }

        var job: Job { core.job }
        var worker: RegisteredWorker { core.worker }
        var receivedAtMs: Int64 { core.receivedAtMs }
        var apnsIdHeader: [UInt8]? { core.apnsIdHeader }
        var collapseKey: CollapseKey? { core.collapseKey }
        var dedupeId: [UInt8]? { core.dedupeId }
        var dueNs: Int64? { core.dueNs }
        var notBeforeMs: Int64? { core.notBeforeMs }
        var holdsKey: Bool { core.holdsKey }
        var origin: RecordSource { core.origin }
        var apnsExpiration: [UInt8]? { core.apnsExpiration }

        /// The partition it was read from: its lane in the ready and blocked queues (``FairQueue``).
        var lane: PartitionLane { PartitionLane(core.job.source) }

        func isDue(atNs nowNs: Int64) -> Bool { core.dueNs.map { $0 <= nowNs } ?? true }

        /// The input record the job was built from (its parts are shared with the job, not copied).
        var input: InputRecord {
            let job = core.job
            return InputRecord(source: job.source, key: job.key, value: job.value, headers: job.headers, receivedAtMs: core.receivedAtMs)
        }
    }

    /// The Kafka key and `apns-collapse-id` of a collapsible job.
    struct CollapseKey: Hashable, Sendable {
        var key: [UInt8]
        var collapseId: [UInt8]
    }

    private struct State {
        var running = 0
        /// The newest waiting (not started) job of each collapse key.
        var collapsible: [CollapseKey: Pending] = [:]
        /// Tickets of jobs collapsed while they waited: their results are out; they still sit in a queue
        /// (``keyQueues``, ``ready`` or ``blocked``) and are skipped when they reach its front.
        var collapsed: Set<UInt64> = []
        var lastTicket: UInt64 = 0
        /// The `apns-id`s taken within the dedupe window, or `nil` when dedupe is off.
        var dedupe: DedupeWindow?
        /// Keys with a job running or waiting; each holds the jobs queued behind the running one.
        var keyQueues: [[UInt8]: FIFOQueue<Pending>] = [:]
        /// Jobs whose key is free, waiting for a slot; the partitions take turns (``FairQueue``).
        var ready = FairQueue<PartitionLane, Pending>()
        /// Jobs whose key is free but whose worker runs its `maxConcurrent` jobs, by worker name.
        var blocked: [String: FairQueue<PartitionLane, Pending>] = [:]
        var runningByWorker: [String: Int] = [:]
        var waiting = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Finished jobs (and batches of held jobs that left their wait without running) whose outputs are
        /// decided but not yet handed over (``JobDispatcher/finished(_:failed:retried:output:)``
        /// releases the slot under the lock and hands the outputs over after it), with the outputs deferred
        /// behind them (``Park/deferred``).
        var handOvers = 0
        /// Whether no worker runs, none waits and every output decided has been handed over.
        var isIdle: Bool { running == 0 && waiting == 0 && handOvers == 0 }
        /// The jobs holding a slot, by their run: what cutting them short needs, not the whole job (with
        /// 100 000 jobs running, whole ``Pending`` values made this table 170 MB).
        var active: [ObjectIdentifier: ActiveRun] = [:]
        /// Set by ``JobDispatcher/stopNow()``: no job starts any more.
        var stopped = false
        /// Jobs waiting for their time (``Pending/dueNs``): retries holding their key, scheduled pushes.
        var held = DueHeap<Pending>()
        /// When the delay timer is set to fire next (nanoseconds since the clock origin), or `nil`.
        var wakeAtNs: Int64?
        /// Whether a job was held since the timer was last looked at (``takeWake()``).
        var heldSinceWake = false
        /// Keys whose records go through the retry topic behind an earlier record of theirs (a retry):
        /// the records forwarded and not yet read back here, and when the parking ends anyway.
        var parked: [[UInt8]: Park] = [:]
        /// The dispatcher's monotonic clock origin (for ``Pending/dueNs``).
        let clockOrigin: ContinuousClock.Instant

        init(clockOrigin: ContinuousClock.Instant) {
            self.clockOrigin = clockOrigin
        }

        var nowNs: Int64 { clockOrigin.duration(to: .now).wholeNanoseconds }

        /// Holds `pending` until its time.
        mutating func hold(_ pending: Pending, dueNs: Int64) {
            var waiting = pending
            waiting.waited = true
            held.insert(waiting, dueNs: dueNs)
            heldSinceWake = true
        }

        /// The time to set the delay timer for, when a job was held since it was last set and is due before
        /// the timer fires (or the timer is not set); called at the end of every locked section that may
        /// hold a job, so that no section takes the lock again for the timer.
        mutating func takeWake() -> Int64? {
            guard heldSinceWake else { return nil }
            heldSinceWake = false
            guard let earliest = held.earliestDueNs else { return nil }
            if let wakeAt = wakeAtNs, wakeAt <= earliest { return nil }
            wakeAtNs = earliest
            return earliest
        }

        func workerHasRoom(_ pending: Pending) -> Bool {
            guard let limit = pending.worker.maxConcurrent else { return true }
            return runningByWorker[pending.worker.name, default: 0] < limit
        }

        /// Whether `pending` was collapsed while it waited (then it is forgotten here: it must not start).
        mutating func takeCollapsed(_ pending: Pending) -> Bool {
            guard pending.ticket != 0, !collapsed.isEmpty else { return false }
            return collapsed.remove(pending.ticket) != nil
        }

        /// Forgets `pending` as the newest waiting job of its collapse key (it starts or is taken back).
        mutating func leaveCollapsible(_ pending: Pending) {
            guard let collapseKey = pending.collapseKey, collapsible[collapseKey]?.ticket == pending.ticket else { return }
            collapsible[collapseKey] = nil
        }

        /// Hands `key`, held by a job that no longer holds it (finished, cut short, taken back, or collapsed
        /// while it held the key), to the next job queued behind it (skipping collapsed ones), or frees it.
        mutating func passKey(_ key: [UInt8]) {
            while let next = keyQueues[key]?.popFirst() {
                if takeCollapsed(next) { continue }
                enqueue(next)
                return
            }
            keyQueues[key] = nil
        }

        /// Gives `pending` a slot and its run; returns it with the run.
        mutating func markStarted(_ pending: Pending) -> Pending {
            if pending.ticket != 0 { leaveCollapsible(pending) }
            running += 1
            if pending.worker.maxConcurrent != nil { runningByWorker[pending.worker.name, default: 0] += 1 }
            var started = pending
            let run = WorkerRun()
            started.run = run
            active[ObjectIdentifier(run)] = ActiveRun(started, run: run)
            return started
        }

        /// Frees the slot of `pending`, which has finished or been cut short.
        mutating func release(_ pending: Pending) {
            freeSlot(run: pending.run, workerName: pending.worker.name, hasWorkerLimit: pending.worker.maxConcurrent != nil)
        }

        /// Frees the slot of `active`, which has been cut short.
        mutating func release(_ active: ActiveRun) {
            freeSlot(run: active.run, workerName: active.workerName, hasWorkerLimit: active.hasWorkerLimit)
        }

        private mutating func freeSlot(run: WorkerRun?, workerName name: String, hasWorkerLimit: Bool) {
            running -= 1
            if let run { active[ObjectIdentifier(run)] = nil }
            if hasWorkerLimit {
                runningByWorker[name, default: 1] -= 1
                if runningByWorker[name] == 0 { runningByWorker[name] = nil }
            }
        }

        /// Queues a job whose key is free: held until its time when it has one still to come, else ready for
        /// a slot, or blocked behind its worker's limit.
        mutating func enqueue(_ pending: Pending) {
            if let dueNs = pending.dueNs, dueNs > nowNs {
                hold(pending, dueNs: dueNs)
                return
            }
            if workerHasRoom(pending) {
                ready.append(pending, lane: pending.lane)
            } else {
                blocked[pending.worker.name, default: FairQueue()].append(pending, lane: pending.lane)
            }
        }

        /// Starts ready jobs while slots are free; jobs whose worker is at its limit move aside.
        mutating func fillSlots(maxInFlight: Int) -> [Pending] {
            var toStart: [Pending] = []
            while !stopped, running < maxInFlight, let next = ready.popFirst() {
                if takeCollapsed(next) {
                    // It held its key: the job behind it takes its turn.
                    if let key = next.job.key { passKey(key) }
                    continue
                }
                guard workerHasRoom(next) else {
                    blocked[next.worker.name, default: FairQueue()].append(next, lane: next.lane)
                    continue
                }
                waiting -= 1
                toStart.append(markStarted(next))
            }
            return toStart
        }
    }

    /// A job holding a slot (``State/active``): its run, when it took the slot, and its shared ``Pending/Core``
    /// for where it came from, its key, its worker and its type. Three words: the core is alive anyway while
    /// the job runs (its completion holds it), and with 100 000 jobs running copies of those fields made the
    /// table's 262 144 buckets about 19 MB larger.
    struct ActiveRun: Sendable {
        let core: Pending.Core
        let run: WorkerRun
        /// When the job took its slot (``WallClock/monotonicNs()``).
        let startedNs: Int64

        init(_ pending: Pending, run: WorkerRun) {
            core = pending.core
            self.run = run
            startedNs = WallClock.monotonicNs()
        }

        var source: RecordSource { core.job.source }
        var key: [UInt8]? { core.job.key }
        var workerName: String { core.worker.name }
        /// Whether the worker has a `maxConcurrent` (its running jobs are counted by name).
        var hasWorkerLimit: Bool { core.worker.maxConcurrent != nil }
        /// The job's payload `type` (for ``JobDispatcher/loadByType()``).
        var type: String? { core.job.type }
    }

    /// A key parked on this member (``State/parked``).
    struct Park {
        /// Records of the key forwarded to the retry topic by this member and not yet read back here.
        var inTransit: Int
        /// When the parking ends even if they never come back here (another member reads them).
        var expiresAtNs: Int64
        /// Of ``inTransit``, the records written to the retry topic before a later retry of their key (its
        /// run failed again before they were read back): they come back ahead of it, and each is forwarded
        /// again, behind it, so that the key's records still run in offset order.
        var forwardAgain = 0
        /// Whether the retry that parked the key (its result, its retry-topic copy and its followers) has
        /// been decided under the lock but not yet handed over: records of the key forwarded meanwhile wait
        /// in ``deferred`` so that they reach the retry topic behind it, not ahead of it.
        var handingOver = false
        /// Outputs of the key decided while ``handingOver``, in order; the thread handing the retry over
        /// hands them over after it (``JobDispatcher/handOverDeferred(of:)``).
        var deferred: [DispatcherOutput] = []

        /// Keeps `output` (a record of the key on its way to the retry topic) in ``deferred`` while the
        /// retry that parked the key is being handed over; returns whether it did (else the caller hands
        /// `output` over itself).
        mutating func deferWhileHandingOver(_ output: @autoclosure () -> DispatcherOutput) -> Bool {
            guard handingOver else { return false }
            deferred.append(output())
            return true
        }
    }

    private let state: Mutex<State>
    let registry: WorkerRegistry
    let validator: PayloadValidator
    private let executor: BudgetedExecutor
    private let maxInFlight: Int
    private let collapse: Bool
    /// Whether dedupe is on (read without the lock).
    private let dedupes: Bool
    /// The monotonic origin of the dedupe window's and the delays' times.
    private let clockOrigin: ContinuousClock.Instant
    let delay: DelaySettings
    private let random: @Sendable () -> Double
    /// Fires the delay timer (``State/held``).
    private let timerQueue = DispatchQueue(label: "pushworker.dispatcher.delay")
    let onOutputs: @Sendable ([DispatcherOutput]) -> Void

    /// Creates a dispatcher without a retry topic: nothing is retried and scheduled pushes wait in memory
    /// (``DelaySettings/retryTopic`` `nil`); every record yields its results through `onResult`.
    /// - Parameters:
    ///   - registry: the workers by `type`, and the default worker.
    ///   - validator: the payload checks (payload size limit).
    ///   - maxInFlight: the most workers running at once (at least 1).
    ///   - executor: runs workers under their budgets.
    ///   - collapse: whether waiting records of one key with the same `apns-collapse-id` collapse to the
    ///     newest (default `true`).
    ///   - dedupe: the `apns-id` dedupe window, or `nil` (the default) for none.
    ///   - onResult: receives every result and the input record it answers.
    public convenience init(
        registry: WorkerRegistry,
        validator: PayloadValidator = PayloadValidator(),
        maxInFlight: Int,
        executor: BudgetedExecutor,
        collapse: Bool = true,
        dedupe: DedupeConfiguration? = nil,
        onResult: @escaping @Sendable (ResultRecord, InputRecord) -> Void
    ) {
        self.init(registry: registry, validator: validator, maxInFlight: maxInFlight, executor: executor, collapse: collapse, dedupe: dedupe,
                  delay: DelaySettings()) { output in
            // Without a retry topic nothing is forwarded and no result asks for a retry.
            if case .result(let result, let input, _) = output { onResult(result, input) }
        }
    }

    /// Creates a dispatcher.
    /// - Parameters:
    ///   - registry: the workers by `type`, and the default worker.
    ///   - validator: the payload checks (payload size limit).
    ///   - maxInFlight: the most workers running at once (at least 1).
    ///   - executor: runs workers under their budgets.
    ///   - collapse: whether waiting records of one key with the same `apns-collapse-id` collapse to the
    ///     newest (default `true`).
    ///   - dedupe: the `apns-id` dedupe window, or `nil` (the default) for none.
    ///   - delay: the retry topic, the default retry policy and the limits of holding records in memory.
    ///   - random: numbers in 0 ..< 1 for the retries' jitter (default: the system's generator).
    ///   - onOutput: receives every result, with its retry when another attempt follows, and every record
    ///     that goes to the retry topic without a result. It must not block.
    public convenience init(
        registry: WorkerRegistry,
        validator: PayloadValidator = PayloadValidator(),
        maxInFlight: Int,
        executor: BudgetedExecutor,
        collapse: Bool = true,
        dedupe: DedupeConfiguration? = nil,
        delay: DelaySettings,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        onOutput: @escaping @Sendable (DispatcherOutput) -> Void
    ) {
        self.init(registry: registry, validator: validator, maxInFlight: maxInFlight, executor: executor, collapse: collapse,
                  dedupe: dedupe, delay: delay, random: random, onOutputs: { outputs in outputs.forEach(onOutput) })
    }

    /// Creates a dispatcher that hands its outputs over in batches: the outputs of one ``submit(_:)`` (the
    /// records it rejected, and the results of workers that answer at once) in one call, in record order,
    /// and the output of each job that ran on the executor in a call of its own. A receiver that publishes
    /// a batch at once (one lock, one pass) spends less per record than one called per output.
    /// - Parameters: as ``init(registry:validator:maxInFlight:executor:collapse:dedupe:delay:random:onOutput:)``;
    ///   `onOutputs` receives the outputs, never an empty batch. It must not block.
    public init(
        registry: WorkerRegistry,
        validator: PayloadValidator = PayloadValidator(),
        maxInFlight: Int,
        executor: BudgetedExecutor,
        collapse: Bool = true,
        dedupe: DedupeConfiguration? = nil,
        delay: DelaySettings,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        onOutputs: @escaping @Sendable ([DispatcherOutput]) -> Void
    ) {
        let origin = ContinuousClock.now
        self.clockOrigin = origin
        self.state = Mutex(State(clockOrigin: origin))
        self.registry = registry
        self.validator = validator
        self.executor = executor
        self.maxInFlight = max(1, maxInFlight)
        self.collapse = collapse
        self.dedupes = dedupe != nil
        self.delay = delay
        self.random = random
        self.onOutputs = onOutputs
        if let dedupe { state.withLock { $0.dedupe = DedupeWindow(dedupe) } }
    }

    /// Jobs held until their time now (retries waiting for their backoff, scheduled pushes).
    public var heldCount: Int { state.withLock { $0.held.count } }

    /// Keys parked now: their records follow an earlier record of theirs through the retry topic.
    public var parkedKeyCount: Int { state.withLock { $0.parked.count } }

    /// The `apns-id`s remembered by the dedupe window now (0 when dedupe is off).
    public var dedupeEntryCount: Int { state.withLock { $0.dedupe?.count ?? 0 } }

    /// Workers running now.
    public var runningCount: Int { state.withLock { $0.running } }
    /// Routed jobs waiting for a slot or for their key (their budget has not started).
    public var waitingCount: Int { state.withLock { $0.waiting } }

    /// What runs and waits now, by payload `type` (`nil` for records without one), sorted by type; read by
    /// the status page every few seconds, never on the per-record path. Walks the running jobs and the
    /// waiting queues under the dispatcher's lock: O(jobs taken), at most `maxBufferedRecords`.
    public func loadByType() -> [TypeLoad] {
        let nowNs = WallClock.monotonicNs()
        let byType = state.withLock { state -> [String?: TypeLoad] in
            var byType: [String?: TypeLoad] = [:]
            for active in state.active.values {
                var load = byType[active.type] ?? TypeLoad(type: active.type)
                load.running += 1
                load.oldestRunningAge = max(load.oldestRunningAge ?? .zero, .nanoseconds(max(0, nowNs - active.startedNs)))
                byType[active.type] = load
            }
            var waiting: [String?: Int] = [:]
            state.ready.forEach { waiting[$0.job.type, default: 0] += 1 }
            for queue in state.blocked.values { queue.forEach { waiting[$0.job.type, default: 0] += 1 } }
            for queue in state.keyQueues.values { queue.forEach { waiting[$0.job.type, default: 0] += 1 } }
            for (type, count) in waiting { byType[type, default: TypeLoad(type: type)].waiting = count }
            return byType
        }
        return byType.values.sorted { ($0.type ?? "") < ($1.type ?? "") }
    }

    /// Validates, routes and queues `records`, in order.
    public func submit(_ records: [InputRecord]) {
        let nowMs = WallClock.nowMs()
        let now = ContinuousClock.now
        var routed: [Pending] = []
        routed.reserveCapacity(records.count)
        var outputs: [DispatcherOutput] = []
        for record in records {
            switch prepare(record, nowMs: nowMs, now: now) {
            case .result(let result): outputs.append(.result(result, record, retry: nil))
            case .job(let pending): routed.append(pending)
            }
        }
        guard !routed.isEmpty else {
            if !outputs.isEmpty { onOutputs(outputs) }
            return
        }
        let nowNs = clockOrigin.duration(to: now).wholeNanoseconds
        // Outside the lock: whether each job's worker answers at once (noop without delay); never for a job
        // whose time has not come, nor a retryable failure (it runs on the executor, whose completion retries).
        let outcomesNow = routed.map { pending -> WorkerOutcome? in
            guard pending.isDue(atNs: nowNs) else { return nil }
            return Self.immediateOutcome(of: pending)
        }
        var effects = Effects()
        let wake = state.withLock { state -> Int64? in
            for (pending, outcomeNow) in zip(routed, outcomesNow) {
                place(pending, outcomeNow: outcomeNow, nowNs: nowNs, in: &state, effects: &effects)
            }
            return state.takeWake()
        }
        deliver(effects, after: outputs)
        schedule(wake)
    }

    /// What placing jobs decided, delivered after the lock (``deliver(_:)``), in this order.
    private struct Effects {
        /// Duplicates and collapsed jobs, with their results.
        var notRun: [(Pending, ResultRecord)] = []
        /// Records that go to the retry topic without a result (scheduled, requeued, followers).
        var forwards: [(Pending, Forward)] = []
        /// Immediate jobs whose key was free, with their outcomes.
        var finishedNow: [(Pending, WorkerOutcome)] = []
        /// Jobs given a slot.
        var toStart: [Pending] = []
    }

    /// Places one routed job (under the lock): forwards it behind its parked key, holds it or forwards it
    /// while its time has not come, drops it as a duplicate, queues it behind its key (collapsing an older
    /// waiting one), finishes it at once (an immediate worker), starts it, or queues it for a slot.
    private func place(_ routedPending: Pending, outcomeNow: WorkerOutcome?, nowNs: Int64, in state: inout State, effects: inout Effects) {
        var pending = routedPending
        if let key = pending.job.key, !state.parked.isEmpty, var park = state.parked[key] {
            if pending.fromRetryTopic {
                // A record of the key read back from the retry topic: it is in the key's line again here.
                park.inTransit -= 1
                if park.forwardAgain > 0 && park.expiresAtNs > nowNs {
                    // It was written before a later retry of its key, which is still in the retry topic: it
                    // follows that retry again.
                    park.forwardAgain -= 1
                    park.inTransit += 1
                    let forward = forward(pending, .follower)
                    if !park.deferWhileHandingOver(.forward(pending.input, forward)) { effects.forwards.append((pending, forward)) }
                    state.parked[key] = park
                    return
                }
                // A park whose retry is being handed over stays until it is (its deferred outputs are in it).
                state.parked[key] = (park.inTransit > 0 && park.expiresAtNs > nowNs) || park.handingOver ? park : nil
            } else if park.expiresAtNs > nowNs {
                // An earlier record of its key waits in the retry topic: this one follows it there.
                park.inTransit += 1
                let forward = forward(pending, .follower)
                if !park.deferWhileHandingOver(.forward(pending.input, forward)) { effects.forwards.append((pending, forward)) }
                state.parked[key] = park
                return
            } else if !park.handingOver {
                state.parked[key] = nil
            }
        }
        if !pending.holdsKey, let dueNs = pending.dueNs, dueNs > nowNs {
            // A scheduled push (or a requeued one): it waits without holding its key.
            if pending.fromRetryTopic { pending.readBack = true }
            if delay.retryTopic != nil {
                let later = dueNs - nowNs > delay.maxHold.wholeNanoseconds
                let full = state.held.count >= delay.maxHeld
                if later && pending.readBack && !pending.heldBeforeRequeue && !full {
                    // Read back and still not due within maxHold: held here for maxHold, then placed again
                    // (held until due, or written back), so that it costs one produce and one consume per
                    // maxHold rather than as many as the retry topic carries.
                    pending.heldBeforeRequeue = true
                    state.hold(pending, dueNs: nowNs + delay.maxHold.wholeNanoseconds)
                    state.waiting += 1
                    return
                }
                if later || full {
                    effects.forwards.append((pending, forward(pending, pending.readBack ? .requeued : .scheduled)))
                    return
                }
            }
            state.hold(pending, dueNs: dueNs)
            state.waiting += 1
            return
        }
        if let id = pending.dedupeId, state.dedupe != nil {
            // The window's times are the dispatcher's monotonic clock, in ms.
            if let first = state.dedupe?.admit(id, source: pending.job.source, nowMs: nowNs / 1_000_000) {
                effects.notRun.append((pending, duplicate(pending, of: first, windowMs: state.dedupe?.windowMs ?? 0)))
                return
            }
            // A failed first run leaves the window (an immediate outcome is known now).
            if let outcomeNow, outcomeNow.result == .failed, pending.job.key.map({ state.keyQueues[$0] == nil }) ?? true {
                state.dedupe?.forget(id, ifFirstIs: pending.job.source)
            }
        }
        if let key = pending.job.key {
            if state.keyQueues[key] != nil {
                if let collapseKey = pending.collapseKey {
                    state.lastTicket += 1
                    pending.ticket = state.lastTicket
                    // An older job of the collapse key waits (in the key's line or holding the key): it
                    // is replaced by this newer one.
                    if let older = state.collapsible.updateValue(pending, forKey: collapseKey) {
                        state.collapsed.insert(older.ticket)
                        state.waiting -= 1
                        effects.notRun.append((older, collapsedResult(older, by: pending)))
                    }
                }
                state.keyQueues[key]?.append(pending)
                state.waiting += 1
                return
            }
            if let outcomeNow {
                effects.finishedNow.append((pending, outcomeNow))
                return
            }
            state.keyQueues[key] = FIFOQueue()
        } else if let outcomeNow {
            effects.finishedNow.append((pending, outcomeNow))
            return
        }
        if !state.stopped && state.running < maxInFlight && state.workerHasRoom(pending) && pending.isDue(atNs: nowNs) {
            effects.toStart.append(state.markStarted(pending))
        } else {
            // It waits holding its key: a newer job of its collapse key may replace it (not a retry waiting
            // for its time).
            if let collapseKey = pending.collapseKey, pending.isDue(atNs: nowNs) {
                state.lastTicket += 1
                pending.ticket = state.lastTicket
                state.collapsible[collapseKey] = pending
            }
            state.enqueue(pending)
            state.waiting += 1
        }
    }

    /// Hands out what placing decided, in order.
    private func deliver(_ effects: Effects, after earlier: [DispatcherOutput] = []) {
        var outputs = earlier
        outputs.reserveCapacity(earlier.count + effects.notRun.count + effects.forwards.count + effects.finishedNow.count)
        for (pending, result) in effects.notRun { outputs.append(.result(result, pending.input, retry: nil)) }
        for (pending, forward) in effects.forwards { outputs.append(.forward(pending.input, forward)) }
        if !effects.finishedNow.isEmpty {
            let doneMs = WallClock.nowMs()
            for (pending, outcome) in effects.finishedNow {
                outputs.append(.result(result(of: pending, ExecutionReport(
                    outcome: outcome, startedAtMs: doneMs, finishedAtMs: doneMs, durationMs: 0, timedOut: false)), pending.input, retry: nil))
            }
        }
        if !outputs.isEmpty { onOutputs(outputs) }
        effects.toStart.forEach(start)
    }

    /// The outcome `pending`'s worker gives at once (an ``ImmediateWorker``), unless it is a retryable
    /// failure: that one runs on the executor, whose completion makes the retry.
    private static func immediateOutcome(of pending: Pending) -> WorkerOutcome? {
        let worker = pending.worker.worker
        // The noop worker by its concrete type first: a cast to a protocol looks the conformance up in the
        // runtime's table, about 1.4k instructions per record (callgrind); one to a struct compares its
        // type. Any other ImmediateWorker is still found by the protocol cast.
        let immediate: (any ImmediateWorker)? = if let noop = worker as? NoopWorker { noop } else { worker as? any ImmediateWorker }
        guard let outcome = immediate?.immediateOutcome(for: pending.job), !outcome.retryable else { return nil }
        return outcome
    }

    /// The ``Forward`` of `pending` for `kind`.
    private func forward(_ pending: Pending, _ kind: Forward.Kind) -> Forward {
        Forward(kind: kind, runs: pending.job.attempt - 1, notBeforeMs: pending.notBeforeMs, messageId: pending.job.messageId, origin: pending.origin)
    }

    /// Sets the delay timer to fire at `wake` (nanoseconds since the clock origin; ``State/takeWake()``).
    private func schedule(_ wake: Int64?) {
        guard let wake else { return }
        let waitNs = max(0, wake - clockOrigin.duration(to: .now).wholeNanoseconds)
        timerQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(waitNs, Int64(Int.max))))) { [weak self] in
            self?.timerFired()
        }
    }

    /// Moves the held jobs whose time has come on: a retry holding its key to the ready line, a scheduled
    /// push through ``place(_:outcomeNow:nowNs:in:effects:)`` as if it had just arrived.
    private func timerFired() {
        let now = ContinuousClock.now
        let nowNs = clockOrigin.duration(to: now).wholeNanoseconds
        var effects = Effects()
        let (due, next) = state.withLock { state -> ([Pending], Int64?) in
            state.wakeAtNs = nil
            let due = state.held.popDue(nowNs: nowNs)
            // Jobs still held (due later, or held meanwhile) need the timer again.
            state.heldSinceWake = state.heldSinceWake || !state.held.isEmpty
            return (due, due.isEmpty ? state.takeWake() : nil)
        }
        guard !due.isEmpty else {
            schedule(next)
            return
        }
        let outcomesNow = due.map { pending -> WorkerOutcome? in
            pending.holdsKey ? nil : Self.immediateOutcome(of: pending)
        }
        var handsOver = false
        let wake = state.withLock { state -> Int64? in
            for (pending, outcomeNow) in zip(due, outcomesNow) {
                if pending.holdsKey {
                    // A retry holding its key: it was counted as waiting.
                    state.enqueue(pending)
                } else {
                    // A scheduled push: placed as if it had just arrived (it was counted as waiting).
                    state.waiting -= 1
                    var arriving = pending
                    arriving.fromRetryTopic = false  // its read from the retry topic was counted when it arrived
                    place(arriving, outcomeNow: outcomeNow, nowNs: nowNs, in: &state, effects: &effects)
                }
            }
            effects.toStart += state.fillSlots(maxInFlight: maxInFlight)
            state.heldSinceWake = state.heldSinceWake || !state.held.isEmpty
            // Held jobs that leave without running (forwarded, finished at once) were counted as waiting:
            // not idle until their outputs are handed over.
            handsOver = !(effects.notRun.isEmpty && effects.forwards.isEmpty && effects.finishedNow.isEmpty)
            if handsOver { state.handOvers += 1 }
            return state.takeWake()
        }
        deliver(effects)
        if handsOver { handedOver() }
        schedule(wake)
    }

    /// Takes back waiting jobs whose source matches (their workers never start and they get no result),
    /// e.g. for partitions being revoked or at shutdown. Running jobs are not affected.
    /// - Returns: the sources taken back.
    public func discardWaiting(where matches: @Sendable (RecordSource) -> Bool) -> [RecordSource] {
        var timer: Int64?
        let (removed, toStart, wake) = state.withLock { state -> ([RecordSource], [Pending], [CheckedContinuation<Void, Never>]) in
            // A key passed on may go to a retry still waiting for its time.
            defer { timer = state.takeWake() }
            var removedReady = state.ready.removeAll { matches($0.job.source) }
            for name in Array(state.blocked.keys) {
                removedReady += state.blocked[name]?.removeAll { matches($0.job.source) } ?? []
                if state.blocked[name]?.isEmpty == true { state.blocked[name] = nil }
            }
            // Held jobs: a retry holding its key passes the key on like a ready job; a scheduled push holds none.
            let removedHeld = state.held.removeAll { matches($0.job.source) }
            removedReady += removedHeld.filter(\.holdsKey)
            var removedJobs = removedReady + removedHeld.filter { !$0.holdsKey }
            for key in Array(state.keyQueues.keys) {
                removedJobs += state.keyQueues[key]?.removeAll { matches($0.job.source) } ?? []
            }
            // Collapsed jobs taken back already have their results: they are dropped, not returned.
            var removed: [RecordSource] = []
            removed.reserveCapacity(removedJobs.count)
            for pending in removedJobs {
                if pending.ticket != 0 {
                    if state.takeCollapsed(pending) { continue }
                    state.leaveCollapsible(pending)
                }
                removed.append(pending.job.source)
            }
            // A discarded ready or blocked job held its key: hand the key to the next job queued behind it,
            // or free it.
            for pending in removedReady {
                guard let key = pending.job.key else { continue }
                state.passKey(key)
            }
            state.waiting -= removed.count
            let toStart = state.fillSlots(maxInFlight: maxInFlight)
            guard state.isIdle else { return (removed, toStart, []) }
            defer { state.idleWaiters.removeAll() }
            return (removed, toStart, state.idleWaiters)
        }
        toStart.forEach(start)
        wake.forEach { $0.resume() }
        schedule(timer)
        return removed
    }

    /// Stops now (a fast stop): takes back every waiting job, as ``discardWaiting(where:)`` does, and cuts
    /// short every running job: its worker's task is cancelled and its result is never reported (a
    /// `failed`/`timeout` would be false: the job did not run out of its budget, it was stopped). A job whose
    /// outcome was already decided (its worker had returned, or its deadline had passed) still has its result
    /// reported through `onResult`, possibly after this returns. From then on no worker starts: jobs
    /// submitted later wait until taken back (records that need no worker run, rejected ones and those of
    /// an immediate worker such as noop, still get their results at once). Safe from any thread: a job
    /// given its slot concurrently is cut short before its worker starts.
    ///
    /// A worker that ignores the cancellation goes on unobserved; its slot is freed now.
    /// - Returns: the sources of the jobs taken back or cut short (none of them gets a result), in no
    ///   particular order.
    @discardableResult
    public func stopNow() -> [RecordSource] {
        state.withLock { $0.stopped = true }
        return cutShort { _ in true }
    }

    /// Cuts short the jobs whose source matches, e.g. those of partitions revoked or lost in a rebalance
    /// (``stopNow()`` for a subset, without stopping the dispatcher): takes back their waiting jobs, as
    /// ``discardWaiting(where:)`` does, and cancels their running jobs' tasks without reporting a result
    /// for them. A matching job whose outcome was already decided (its worker had returned, or its deadline
    /// had passed) still has its result reported through `onResult`, possibly after this returns. Jobs that
    /// do not match go on untouched, and later jobs start as before. A worker that ignores the cancellation
    /// goes on unobserved; its slot is freed now.
    /// - Returns: the sources of the jobs taken back or cut short (none of them gets a result).
    @discardableResult
    public func cutShort(where matches: @Sendable (RecordSource) -> Bool) -> [RecordSource] {
        let active = state.withLock { state -> [ActiveRun] in
            state.active.values.filter { matches($0.source) }
        }
        var sources = discardWaiting(where: matches)
        let cut = active.filter { executor.abort($0.run) }
        sources += cut.map(\.source)
        guard !cut.isEmpty else { return sources }
        var timer: Int64?
        let (toStart, wake) = state.withLock { state -> ([Pending], [CheckedContinuation<Void, Never>]) in
            defer { timer = state.takeWake() }
            for running in cut {
                state.release(running)
                // The key goes to the next job queued behind it (a record of another partition with the same
                // key), or is freed: every matching waiting job has been taken back.
                if let key = running.key { state.passKey(key) }
            }
            let toStart = state.fillSlots(maxInFlight: maxInFlight)
            guard state.isIdle else { return (toStart, []) }
            defer { state.idleWaiters.removeAll() }
            return (toStart, state.idleWaiters)
        }
        toStart.forEach(start)
        wake.forEach { $0.resume() }
        schedule(timer)
        return sources
    }

    /// Returns once no worker runs and none waits, and the outputs of every job that finished or left its
    /// wait have been handed to `onOutput` (a job's slot is freed before its output is handed over).
    public func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                if state.isIdle { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private enum Prepared {
        case result(ResultRecord)
        case job(Pending)
    }

    private func prepare(_ record: InputRecord, nowMs: Int64, now: ContinuousClock.Instant) -> Prepared {
        let headers = PushHeaders(record.headers)
        let attempt = headers.attempt
        let fromRetryTopic = delay.retryTopic == record.source.topic
        // A job without one in its headers makes its default id (`<topic>-<partition>-<offset>`) when it
        // is read (``Job/messageId``), not here: with 100 000 jobs running, their strings were 8 MB.
        let headersMessageId = headers.messageIdFromHeaders(trustingCarried: fromRetryTopic)
        var messageId: String { headersMessageId ?? record.source.defaultMessageId }
        let origin = fromRetryTopic ? headers.carriedOrigin ?? record.source : record.source
        func immediate(_ result: BackgroundFetchResult, _ reason: ResultReason, _ detail: String, type: String?) -> Prepared {
            .result(ResultRecord(
                messageId: messageId, type: type, result: result, reason: reason, detail: detail, worker: nil,
                attempt: attempt, source: record.source, receivedAtMs: record.receivedAtMs, startedAtMs: nil, finishedAtMs: WallClock.nowMs(),
                durationMs: 0, key: record.key, apnsIdHeader: headers.apnsId, traceparentHeader: headers.traceparent,
                origin: origin == record.source ? nil : origin))
        }
        // Row 1 (the value's size) first, then a header over its bound (row 2, invalidPayload).
        if let problem = headers.problem, (record.value?.count ?? 0) <= validator.maxPayloadBytes {
            return immediate(.failed, .invalidPayload, problem, type: nil)
        }
        let (verdict, payloadType) = validator.check(value: record.value, apnsExpiration: headers.apnsExpiration, nowMs: nowMs)
        switch verdict {
        case .rejected(let result, let reason, let detail):
            return immediate(result, reason, detail, type: payloadType)
        case .accepted(let type):
            guard let worker = registry.route(type: type), let value = record.value else {
                let detail = type.map { "no worker is registered for type \"\($0)\" and there is no default worker" }
                    ?? "the payload has no string \"type\" and there is no default worker"
                return immediate(.noData, .noWorker, detail, type: type)
            }
            // The deadline is set when the worker starts; until then it reads "now".
            let job = Job(
                messageId: headersMessageId, type: type, value: value, key: record.key, headers: record.headers,
                source: record.source, traceparentHeader: headers.traceparent, attempt: attempt, notStartedAt: now, placeholderMs: nowMs)
            var dueNs: Int64?
            var holdsKey = false
            if let notBefore = headers.notBefore, notBefore.isAfter(nowMs) {
                let (waitNs, overflow) = (notBefore.unixMs - nowMs).multipliedReportingOverflow(by: 1_000_000)
                let nowNs = clockOrigin.duration(to: now).wholeNanoseconds
                dueNs = overflow ? .max : nowNs.addingReportingOverflow(waitNs).overflow ? .max : nowNs + waitNs
                // A retry read from the retry topic waits holding its key: the key's later records wait behind it.
                holdsKey = fromRetryTopic && attempt > 1 && record.key != nil
            }
            var collapseKey: CollapseKey?
            if collapse, let collapseId = headers.apnsCollapseId, let key = record.key {
                collapseKey = CollapseKey(key: key, collapseId: collapseId)
            }
            // Redriven and retried records (attempt > 1) are never deduped.
            var dedupeId: [UInt8]?
            if dedupes, attempt == 1, let apnsId = headers.apnsId, !apnsId.isEmpty { dedupeId = apnsId }
            let pending = Pending(Pending.Core(
                job: job, worker: worker, receivedAtMs: record.receivedAtMs, apnsIdHeader: headers.apnsId, collapseKey: collapseKey,
                dedupeId: dedupeId, dueNs: dueNs, notBeforeMs: headers.notBefore?.unixMs, holdsKey: holdsKey,
                origin: origin, apnsExpiration: headers.apnsExpiration), fromRetryTopic: fromRetryTopic)
            return .job(pending)
        }
    }

    private func start(_ pending: Pending) {
        guard let run = pending.run else { return }
        // A job that waited for its time has its apns-expiration checked again: it may have passed meanwhile
        // (contract row 4, checked before each attempt).
        if pending.waited, let header = pending.apnsExpiration, let expiration = APNsExpiration(header: header),
           expiration.hasPassed(atMs: WallClock.nowMs()) {
            guard executor.abort(run) else { return }  // cut short meanwhile (a fast stop): no result
            finished(pending, failed: false, retried: false, output: .result(notRun(pending, .expired, "apns-expiration \(expiration.seconds) passed while the record waited for its time (pushworker-not-before or its retry backoff)"), pending.input, retry: nil))
            return
        }
        executor.start(pending.job, on: pending.worker, run: run) { [self] report in
            var result = result(of: pending, report)
            let retry = retryRequest(for: pending, report, result: &result)
            finished(pending, failed: report.outcome.result == .failed, retried: retry != nil, output: .result(result, pending.input, retry: retry))
        }
    }

    /// The next attempt of `pending` when its run failed retryably and its policy has attempts left (and a
    /// retry topic is set), with `result` marked ``ResultRecord/willRetry``; `nil` when the result is final.
    /// A retry whose time would come after the record's `apns-expiration` is not made: the detail says so.
    private func retryRequest(for pending: Pending, _ report: ExecutionReport, result: inout ResultRecord) -> RetryRequest? {
        guard delay.retryTopic != nil, report.outcome.result == .failed else { return nil }
        let policy = pending.worker.retry ?? delay.defaultPolicy
        let attempt = pending.job.attempt
        guard policy.retries(report.outcome, timedOut: report.timedOut, attempt: attempt) else { return nil }
        let wait = policy.delay(afterAttempt: attempt, random: random())
        let notBeforeMs = WallClock.nowMs() + wait.wholeMilliseconds
        if let header = pending.apnsExpiration, let expiration = APNsExpiration(header: header), expiration.hasPassed(atMs: notBeforeMs) {
            let note = "not retried: apns-expiration \(expiration.seconds) passes before the next attempt would run"
            result.detail = ResultRecord.truncated(result.detail.map { "\($0); \(note)" } ?? note, toBytes: ResultRecord.maxDetailBytes)
            return nil
        }
        result.willRetry = true
        return RetryRequest(runs: attempt, notBeforeMs: notBeforeMs, messageId: pending.job.messageId, origin: pending.origin)
    }

    /// The result of a job that did not run: a repeat of the `apns-id` of `first`.
    private func duplicate(_ pending: Pending, of first: RecordSource, windowMs: Int64) -> ResultRecord {
        let id = pending.dedupeId.map(PayloadValidator.describeHeader) ?? "''"
        return notRun(pending, .duplicate, "apns-id \(id) repeats the record at \(first.topic)/\(first.partition) offset \(first.offset), taken within the dedupe window of \(windowMs) ms; only the first runs")
    }

    /// The result of a job that did not run: replaced, while it waited, by the newer `newer`.
    private func collapsedResult(_ older: Pending, by newer: Pending) -> ResultRecord {
        let id = older.collapseKey.map { PayloadValidator.describeHeader($0.collapseId) } ?? "''"
        let source = newer.job.source
        return notRun(older, .collapsed, "collapsed by the newer record at \(source.topic)/\(source.partition) offset \(source.offset) with the same key and apns-collapse-id \(id) while this one waited; only the newest runs")
    }

    /// A `noData` result for a routed job whose worker never starts.
    private func notRun(_ pending: Pending, _ reason: ResultReason, _ detail: String) -> ResultRecord {
        let job = pending.job
        return ResultRecord(
            messageId: job.messageId, type: job.type, result: .noData, reason: reason,
            detail: ResultRecord.truncated(detail, toBytes: ResultRecord.maxDetailBytes), worker: nil,
            attempt: job.attempt, source: job.source, receivedAtMs: pending.receivedAtMs, startedAtMs: nil,
            finishedAtMs: WallClock.nowMs(), durationMs: 0, key: job.key, apnsIdHeader: pending.apnsIdHeader,
            traceparentHeader: job.traceparentHeader, origin: pending.origin == job.source ? nil : pending.origin)
    }

    private func result(of pending: Pending, _ report: ExecutionReport) -> ResultRecord {
        let job = pending.job
        return ResultRecord(
            messageId: job.messageId, type: job.type, result: report.outcome.result,
            reason: report.outcome.reason.map { ResultReason(ResultRecord.truncated($0.rawValue, toBytes: ResultRecord.maxReasonBytes)) },
            detail: report.outcome.detail.map { ResultRecord.truncated($0, toBytes: ResultRecord.maxDetailBytes) },
            worker: pending.worker.name, attempt: job.attempt, source: job.source,
            receivedAtMs: pending.receivedAtMs, startedAtMs: report.startedAtMs, finishedAtMs: report.finishedAtMs,
            durationMs: report.durationMs, key: job.key, apnsIdHeader: pending.apnsIdHeader, traceparentHeader: job.traceparentHeader,
            origin: pending.origin == job.source ? nil : pending.origin)
    }

    /// Frees the slot and the key of `pending`, which has finished. When it will be retried (`retried`), the
    /// jobs of its key queued behind it follow it through the retry topic, in order, and its key is parked:
    /// later records of the key follow too (``place(_:outcomeNow:nowNs:in:effects:)``) until what
    /// was forwarded is read back here, or the parking expires.
    ///
    /// `output` (its result, with the copy for the retry topic when it is retried) is handed over after the
    /// key is parked and before its followers: handed over first, its retry copy could be delivered and
    /// read back from the retry topic before the key was parked, and then count against a parking made
    /// after it (found by RetryServiceTests on a loaded machine: the retry ran as its own follower). Until
    /// it is handed over, records of the key that other threads forward (``Park/handingOver``) wait and are
    /// handed over after it, by this thread: handed over at once, one could reach the retry topic ahead of
    /// the retry, be read back first and run before it (found by the same tests: a key's steps ran 1, 0, 2, 3).
    private func finished(_ pending: Pending, failed: Bool, retried: Bool, output: DispatcherOutput) {
        let nowNs = clockOrigin.duration(to: .now).wholeNanoseconds
        var timer: Int64?
        /// The outputs to hand over now (none when they wait behind an earlier hand-over of the key).
        var outputs: [DispatcherOutput] = []
        /// The key whose deferred outputs this thread hands over after `outputs`.
        var handingOverKey: [UInt8]?
        let toStart = state.withLock { state -> [Pending] in
            defer { timer = state.takeWake() }
            state.release(pending)
            // Not idle until the outputs are handed over (waitUntilIdle's callers read them).
            state.handOvers += 1
            // A failed first run leaves the dedupe window (a later repeat runs), unless it runs again.
            if failed && !retried, let id = pending.dedupeId { state.dedupe?.forget(id, ifFirstIs: pending.job.source) }
            let name = pending.worker.name
            if pending.worker.maxConcurrent != nil {
                // The worker has room again: its longest-waiting blocked job joins the ready line (a collapsed
                // one is dropped, and the job behind it in its key's line takes its turn).
                while let next = state.blocked[name]?.popFirst() {
                    if state.takeCollapsed(next) {
                        if let key = next.job.key { state.passKey(key) }
                        continue
                    }
                    state.ready.append(next, lane: next.lane)
                    break
                }
                if state.blocked[name]?.isEmpty == true { state.blocked[name] = nil }
            }
            var followers: [Pending] = []
            if let key = pending.job.key {
                if retried {
                    // The key's queued jobs follow the retry through the retry topic, in order.
                    while let next = state.keyQueues[key]?.popFirst() {
                        if state.takeCollapsed(next) { continue }
                        state.leaveCollapsible(next)
                        if let id = next.dedupeId { state.dedupe?.forget(id, ifFirstIs: next.job.source) }
                        followers.append(next)
                    }
                    state.keyQueues[key] = nil
                    state.waiting -= followers.count
                    let policy = pending.worker.retry ?? delay.defaultPolicy
                    let runsLeft = Int64(max(0, policy.maxAttempts - pending.job.attempt))
                    let horizon = policy.longestRemainingWait(afterAttempt: pending.job.attempt) + pending.worker.budget * runsLeft + delay.parkSlack
                    let expires = nowNs.addingReportingOverflow(horizon.wholeNanoseconds)
                    var park = state.parked[key] ?? Park(inTransit: 0, expiresAtNs: 0)
                    // Records of the key still in the retry topic (forwarded behind an earlier attempt and not
                    // read back yet) were written before this retry: they come back first and follow it again.
                    park.forwardAgain = park.inTransit
                    park.inTransit += 1 + followers.count
                    park.expiresAtNs = max(park.expiresAtNs, expires.overflow ? .max : expires.partialValue)
                    var retryOutputs = [output]
                    retryOutputs.reserveCapacity(1 + followers.count)
                    for follower in followers { retryOutputs.append(.forward(follower.input, forward(follower, .follower))) }
                    if park.handingOver {
                        // An earlier retry of the key is still being handed over (by a thread that has not
                        // come back for its deferred outputs yet): this one follows it.
                        park.deferred += retryOutputs
                    } else {
                        park.handingOver = true
                        outputs = retryOutputs
                        handingOverKey = key
                    }
                    state.parked[key] = park
                } else {
                    // The key's next job moves to the back of the ready line; it waits no longer for its key.
                    state.passKey(key)
                }
            }
            if !retried || pending.job.key == nil { outputs = [output] }
            return state.fillSlots(maxInFlight: maxInFlight)
        }
        if !outputs.isEmpty { onOutputs(outputs) }
        if let handingOverKey { handOverDeferred(of: handingOverKey) }
        handedOver()
        toStart.forEach(start)
        schedule(timer)
    }

    /// Notes that outputs counted in ``State/handOvers`` have been handed over, and wakes the idle waiters
    /// when nothing else runs, waits or is being handed over.
    private func handedOver() {
        let wake = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.handOvers -= 1
            guard state.isIdle else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        wake.forEach { $0.resume() }
    }

    /// Hands over, in order, the outputs of `key` deferred while this thread handed over the retry that
    /// parked it (``Park/deferred``), until none is left; then records of the key are forwarded at once again.
    private func handOverDeferred(of key: [UInt8]) {
        while true {
            let batch = state.withLock { state -> [DispatcherOutput] in
                guard var park = state.parked[key], park.handingOver else { return [] }
                let batch = park.deferred
                if batch.isEmpty { park.handingOver = false } else { park.deferred = [] }
                state.parked[key] = park
                return batch
            }
            guard !batch.isEmpty else { return }
            onOutputs(batch)
        }
    }
}
