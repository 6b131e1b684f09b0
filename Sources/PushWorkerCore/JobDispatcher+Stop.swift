// Taking back waiting jobs and cutting running ones short: rebalances and fast stops.

extension JobDispatcher {
    /// Takes back waiting jobs whose source matches (their workers never start and they get no result),
    /// e.g. for partitions being revoked or at shutdown. Running jobs are not affected.
    /// - Returns: the sources taken back.
    public func discardWaiting(where matches: @Sendable (RecordSource) -> Bool) -> [RecordSource] {
        var timer: Int64?
        let nowNs = self.nowNs
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
                state.passKey(key, nowNs: nowNs)
            }
            state.waiting -= removed.count
            let toStart = state.fillSlots(maxInFlight: maxInFlight, nowNs: nowNs)
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
        let nowNs = self.nowNs
        let (toStart, wake) = state.withLock { state -> ([Pending], [CheckedContinuation<Void, Never>]) in
            defer { timer = state.takeWake() }
            for running in cut {
                state.release(running)
                // The key goes to the next job queued behind it (a record of another partition with the same
                // key), or is freed: every matching waiting job has been taken back.
                if let key = running.key { state.passKey(key, nowNs: nowNs) }
            }
            let toStart = state.fillSlots(maxInFlight: maxInFlight, nowNs: nowNs)
            guard state.isIdle else { return (toStart, []) }
            defer { state.idleWaiters.removeAll() }
            return (toStart, state.idleWaiters)
        }
        toStart.forEach(start)
        wake.forEach { $0.resume() }
        schedule(timer)
        return sources
    }
}
