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
    let state: Mutex<State>
    let registry: WorkerRegistry
    let validator: PayloadValidator
    let executor: BudgetedExecutor
    let maxInFlight: Int
    let collapse: Bool
    /// Whether dedupe is on (read without the lock).
    let dedupes: Bool
    /// The monotonic origin of the dedupe window's and the delays' times.
    let clockOrigin: ContinuousClock.Instant
    let delay: DelaySettings
    let random: @Sendable () -> Double
    /// Fires the delay timer (``State/held``).
    let timerQueue = DispatchQueue(label: "pushworker.dispatcher.delay")
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
        self.state = Mutex(State())
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
    struct Effects {
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
    func place(_ routedPending: Pending, outcomeNow: WorkerOutcome?, nowNs: Int64, in state: inout State, effects: inout Effects) {
        var pending = routedPending
        if let key = pending.job.key, !state.parked.isEmpty {
            // Its key parked: it follows the key's retry through the retry topic (or, read back from there,
            // it is in the key's line here again).
            switch state.parked.arrive(key, fromRetryTopic: pending.fromRetryTopic, nowNs: nowNs,
                                       forward: .forward(pending.input, forward(pending, .follower))) {
            case .placeHere: break
            case .follow:
                effects.forwards.append((pending, forward(pending, .follower)))
                return
            case .followDeferred: return
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
            state.enqueue(pending, nowNs: nowNs)
            state.waiting += 1
        }
    }

    /// Hands out what placing decided, in order.
    func deliver(_ effects: Effects, after earlier: [DispatcherOutput] = []) {
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
    static func immediateOutcome(of pending: Pending) -> WorkerOutcome? {
        let worker = pending.worker.worker
        // The noop worker by its concrete type first: a cast to a protocol looks the conformance up in the
        // runtime's table, about 1.4k instructions per record (callgrind); one to a struct compares its
        // type. Any other ImmediateWorker is still found by the protocol cast.
        let immediate: (any ImmediateWorker)? = if let noop = worker as? NoopWorker { noop } else { worker as? any ImmediateWorker }
        guard let outcome = immediate?.immediateOutcome(for: pending.job), !outcome.retryable else { return nil }
        return outcome
    }

    /// The ``Forward`` of `pending` for `kind`.
    func forward(_ pending: Pending, _ kind: Forward.Kind) -> Forward {
        Forward(kind: kind, runs: pending.job.attempt - 1, notBeforeMs: pending.notBeforeMs, messageId: pending.job.messageId, origin: pending.origin)
    }

    /// Now on the dispatcher's monotonic clock (nanoseconds since its origin): the time its ``State`` is given.
    var nowNs: Int64 { clockOrigin.duration(to: .now).wholeNanoseconds }

    /// Sets the delay timer to fire at `wake` (nanoseconds since the clock origin; ``State/takeWake()``).
    func schedule(_ wake: Int64?) {
        guard let wake else { return }
        let waitNs = max(0, wake - nowNs)
        timerQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(waitNs, Int64(Int.max))))) { [weak self] in
            self?.timerFired()
        }
    }

    /// Moves the held jobs whose time has come on: a retry holding its key to the ready line, a scheduled
    /// push through ``place(_:outcomeNow:nowNs:in:effects:)`` as if it had just arrived.
    func timerFired() {
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
                    state.enqueue(pending, nowNs: nowNs)
                } else {
                    // A scheduled push: placed as if it had just arrived (it was counted as waiting).
                    state.waiting -= 1
                    var arriving = pending
                    arriving.fromRetryTopic = false  // its read from the retry topic was counted when it arrived
                    place(arriving, outcomeNow: outcomeNow, nowNs: nowNs, in: &state, effects: &effects)
                }
            }
            effects.toStart += state.fillSlots(maxInFlight: maxInFlight, nowNs: nowNs)
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
}
