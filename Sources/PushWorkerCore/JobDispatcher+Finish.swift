// Starting a job, and what follows when it finishes: its slot and key freed, its outputs handed over.

extension JobDispatcher {
    func start(_ pending: Pending) {
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

    /// Frees the slot and the key of `pending`, which has finished. When it will be retried (`retried`), the
    /// jobs of its key queued behind it follow it through the retry topic, in order, and its key is parked:
    /// later records of the key follow too (``place(_:outcomeNow:nowNs:in:effects:)``) until what
    /// was forwarded is read back here, or the parking expires.
    ///
    /// `output` (its result, with the copy for the retry topic when it is retried) is handed over after the
    /// key is parked and before its followers: handed over first, its retry copy could be delivered and
    /// read back from the retry topic before the key was parked, and then count against a parking made
    /// after it (found by RetryServiceTests on a loaded machine: the retry ran as its own follower). Until
    /// it is handed over, records of the key that other threads forward (``RetryParking/Park/handingOver``) wait and are
    /// handed over after it, by this thread: handed over at once, one could reach the retry topic ahead of
    /// the retry, be read back first and run before it (found by the same tests: a key's steps ran 1, 0, 2, 3).
    func finished(_ pending: Pending, failed: Bool, retried: Bool, output: DispatcherOutput) {
        let nowNs = self.nowNs
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
                        if let key = next.job.key { state.passKey(key, nowNs: nowNs) }
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
                    var retryOutputs = [output]
                    retryOutputs.reserveCapacity(1 + followers.count)
                    for follower in followers { retryOutputs.append(.forward(follower.input, forward(follower, .follower))) }
                    // Behind an earlier retry of the key still being handed over (by a thread that has not come
                    // back for its deferred outputs yet), they are kept and follow it (nil).
                    if let now = state.parked.park(key, outputs: retryOutputs,
                                                   expiresAtNs: expires.overflow ? .max : expires.partialValue) {
                        outputs = now
                        handingOverKey = key
                    }
                } else {
                    // The key's next job moves to the back of the ready line; it waits no longer for its key.
                    state.passKey(key, nowNs: nowNs)
                }
            }
            if !retried || pending.job.key == nil { outputs = [output] }
            return state.fillSlots(maxInFlight: maxInFlight, nowNs: nowNs)
        }
        if !outputs.isEmpty { onOutputs(outputs) }
        if let handingOverKey { handOverDeferred(of: handingOverKey) }
        handedOver()
        toStart.forEach(start)
        schedule(timer)
    }

    /// Notes that outputs counted in ``State/handOvers`` have been handed over, and wakes the idle waiters
    /// when nothing else runs, waits or is being handed over.
    func handedOver() {
        let wake = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.handOvers -= 1
            guard state.isIdle else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        wake.forEach { $0.resume() }
    }

    /// Hands over, in order, the outputs of `key` deferred while this thread handed over the retry that
    /// parked it (``RetryParking/Park/deferred``), until none is left; then records of the key are forwarded at once again
    /// while some are in transit, and the key is unparked when none is.
    func handOverDeferred(of key: [UInt8]) {
        while true {
            let batch = state.withLock { $0.parked.takeDeferred(key) }
            guard !batch.isEmpty else { return }
            onOutputs(batch)
        }
    }
}
