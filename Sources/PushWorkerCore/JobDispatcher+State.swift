// The dispatcher's queues, slots and keys: what its lock guards.

extension JobDispatcher {
    struct State {
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
        /// behind them (``RetryParking/Park/deferred``).
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
        var parked = RetryParking()

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
        mutating func passKey(_ key: [UInt8], nowNs: Int64) {
            while let next = keyQueues[key]?.popFirst() {
                if takeCollapsed(next) { continue }
                enqueue(next, nowNs: nowNs)
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
        mutating func enqueue(_ pending: Pending, nowNs: Int64) {
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
        mutating func fillSlots(maxInFlight: Int, nowNs: Int64) -> [Pending] {
            var toStart: [Pending] = []
            while !stopped, running < maxInFlight, let next = ready.popFirst() {
                if takeCollapsed(next) {
                    // It held its key: the job behind it takes its turn.
                    if let key = next.job.key { passKey(key, nowNs: nowNs) }
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
}
