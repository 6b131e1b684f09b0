import Foundation
import PushWorkerCore
import PushWorkerKafka
import Synchronization

/// The consume side of the service, run on one dedicated thread: polls records in batches, tracks them,
/// hands them to the dispatcher, applies backpressure with pause/resume, and handles rebalances.
final class ConsumerLoop: Sendable {
    private struct State {
        /// Whether the loop has stopped taking records (everything assigned is paused).
        var stopping = false
        /// The partitions paused for room (``PartitionBackpressure``).
        var room: PartitionBackpressure
        /// The assigned partitions paused on the consumer now: for room, ``held``, or by the first-join hold.
        var pausedNow: Set<TopicPartition> = []
        var assigned: Set<TopicPartition> = []
        /// Assigned partitions paused because their results cannot be delivered now
        /// (``ResultPublisher/failingPartitions``); resumed once they can.
        var held: Set<TopicPartition> = []
        /// Whether the service is closing the consumer: the shutdown has already waited for jobs and
        /// results, so the revocation that `close` brings does not wait again.
        var closing = false
        /// Until when the partitions of this process's first assignments stay paused while not every
        /// member of the process has its first assignment (``firstJoinHoldLimit``); `nil` once lifted, and
        /// from the start with one member.
        var firstJoinHoldUntil: ContinuousClock.Instant?
    }

    /// The longest the first assignments are held while another member of this process has none yet: 30 s.
    ///
    /// Why hold them: a member of the process that misses the group's first generation costs the group a
    /// second rebalance, and a commit sent while a member's JoinGroup is pending comes back
    /// `ILLEGAL_GENERATION`, which librdkafka before 2.10.0 takes for a lost assignment (librdkafka issue
    /// #4059): the member's running jobs are cut short and its offsets are not committed. With nothing
    /// taken yet, nothing is stored and nothing is committed during that rebalance. On a Kafka broker the
    /// members of a process join within milliseconds of each other and the hold ends at once; librdkafka
    /// 2.0.2's embedded cluster completes a generation's SyncGroup with the leader's and refuses a member
    /// whose SyncGroup comes after it (`INVALID_REQUEST`), so there a second rebalance follows now and then
    /// (`session.timeout.ms` − 1 s).
    static let firstJoinHoldLimit = Duration.seconds(30)

    private let state: Mutex<State>
    private let consumer: KafkaGroupMembers
    private let dispatcher: JobDispatcher
    private let publisher: any OutputPublisher
    /// The exactly-once mode's publisher (the same object as `publisher`), or `nil` in the at-least-once
    /// mode: then offsets come from its transactions, never from the consumer's stores and commits, and
    /// the loop rewinds after an aborted transaction.
    private let transactions: TransactionalPublisher?
    private let tracker: OffsetTracker
    /// The crash guard (``CrashGuard``), or `nil` when it is off: then every record goes to the dispatcher
    /// as it is taken.
    private let crashGuard: CrashGuard?
    private let drainTimeoutMs: Int
    /// How long a revocation waits for the revoked partitions' running jobs and their results before it
    /// cuts the jobs still running short (``ServiceConfiguration/effectiveRebalanceDrainTimeout(for:)``).
    private let rebalanceDrainTimeoutMs: Int
    private let logger: PushWorkerLogger
    private let statistics: @Sendable (@Sendable (inout PushWorkerService.Statistics) -> Void) -> Void
    private let metrics: ServiceMetrics
    /// Whether a fast stop is requested (the task running the service was cancelled): running jobs are cut
    /// short instead of awaited, and no wait (a drain, a revocation) goes on.
    private let stopNow: @Sendable () -> Bool
    /// Beats when the consumer thread makes progress: each poll round, each step of a drain. Ended once
    /// ``run(until:)`` has returned.
    private let heartbeat = Heartbeat()

    /// The most records handed to the dispatcher at once.
    static let batchSize = 2048

    init(
        consumer: KafkaGroupMembers, dispatcher: JobDispatcher, publisher: any OutputPublisher, transactions: TransactionalPublisher? = nil, tracker: OffsetTracker,
        crashGuard: CrashGuard? = nil, maxBuffered: Int, drainTimeoutMs: Int, rebalanceDrainTimeoutMs: Int? = nil, logger: PushWorkerLogger, metrics: ServiceMetrics,
        stopNow: @escaping @Sendable () -> Bool = { false },
        statistics: @escaping @Sendable (@Sendable (inout PushWorkerService.Statistics) -> Void) -> Void
    ) {
        self.stopNow = stopNow
        self.consumer = consumer
        self.dispatcher = dispatcher
        self.publisher = publisher
        self.transactions = transactions
        self.tracker = tracker
        self.crashGuard = crashGuard
        var initial = State(room: PartitionBackpressure(maxBuffered: maxBuffered))
        if consumer.members.count > 1 { initial.firstJoinHoldUntil = ContinuousClock.now.advanced(by: Self.firstJoinHoldLimit) }
        self.state = Mutex(initial)
        self.drainTimeoutMs = drainTimeoutMs
        self.rebalanceDrainTimeoutMs = rebalanceDrainTimeoutMs ?? drainTimeoutMs
        self.logger = logger
        self.statistics = statistics
        self.metrics = metrics
    }

    /// How long ago the consumer thread last made progress, or `nil` once the loop has ended. It polls with
    /// a 100 ms timeout, so anything above a few seconds means the thread is stuck.
    var sinceLastRound: Duration? { heartbeat.sinceLastBeat }

    /// Polls until `shouldStop` returns true, then stops taking records and waits (still serving the
    /// consumer) for running jobs to finish or reach their deadline; on a fast stop (`stopNow`, at any point
    /// of that wait too) it cuts them short instead (``JobDispatcher/stopNow()``): they get no result and
    /// their offsets are not committed. Blocking: dedicated thread only.
    /// - Throws: ``KafkaError/Code/fatal`` on a fatal consumer error or a rewind that fails; in the
    ///   exactly-once mode, the ``KafkaTransactionError`` that stopped the transactions.
    func run(until shouldStop: () -> Bool) throws {
        defer { heartbeat.end() }
        var batch: [InputRecord] = []
        var taken: [(TopicPartition, Int64)] = []
        batch.reserveCapacity(Self.batchSize)
        taken.reserveCapacity(Self.batchSize)
        while !shouldStop() {
            heartbeat.beat()
            if let transactions { try serve(transactions) }
            // Not more than a few batches ahead of the publishing thread (the loop comes round within
            // 100 ms either way, to serve the consumer).
            publisher.waitForRoom(timeoutMs: 100)
            // A partition running its records one at a time hands the next over once the last is answered:
            // come round often then.
            var timeout: Int32 = crashGuard?.isolating == true ? 5 : 100
            while batch.count < Self.batchSize, let record = try consumer.poll(timeoutMs: timeout) {
                timeout = 0
                let receivedAtMs = WallClock.nowMs()
                taken.append((record.topicPartition, record.offset))
                batch.append(InputRecord(consumed: record, receivedAtMs: receivedAtMs))
                if shouldStop() { break }
            }
            if stopNow() {
                // Taken but never tracked: no offset at or past them is committed.
                batch.removeAll()
                taken.removeAll()
                break
            }
            if let crashGuard {
                let count = batch.count
                if count > 0 {
                    statistics { $0.recordsConsumed += count }
                    metrics.recordsConsumed.increment(by: Double(count))
                }
                // The guard holds back records of partitions that run them one at a time, and commits its
                // markers before the records it lets go start.
                let round = crashGuard.round(batch, outstanding: tracker.outstandingByPartition)
                if round.passedThrough {
                    if count > 0 {
                        tracker.track(taken)
                        transactions?.noteTaken(taken)
                        dispatcher.submit(round.submit)
                    }
                } else {
                    hand(round.submit, answered: round.condemned)
                }
                batch.removeAll(keepingCapacity: true)
                taken.removeAll(keepingCapacity: true)
            } else if !batch.isEmpty {
                let count = batch.count
                tracker.track(taken)
                transactions?.noteTaken(taken)
                dispatcher.submit(batch)
                statistics { $0.recordsConsumed += count }
                metrics.recordsConsumed.increment(by: Double(count))
                batch.removeAll(keepingCapacity: true)
                taken.removeAll(keepingCapacity: true)
            }
            publisher.retryBacklog()
            applyBackpressure()
        }
        stopTaking()
    }

    /// Tracks and hands over what the crash guard lets go: records to run, and records answered without
    /// running (``JobDispatcher/answerCrashed(_:)``); never both for one partition in one round.
    private func hand(_ records: [InputRecord], answered: [(record: InputRecord, deaths: Int)]) {
        guard !records.isEmpty || !answered.isEmpty else { return }
        let taken = (records + answered.map(\.record)).map { (TopicPartition(topic: $0.source.topic, partition: $0.source.partition), $0.source.offset) }
        tracker.track(taken)
        transactions?.noteTaken(taken)
        if !records.isEmpty { dispatcher.submit(records) }
        dispatcher.answerCrashed(answered)
    }

    /// Pauses the partitions that hold more than their share of the room for unfinished records once the
    /// member is full, and resumes them as they drain (``PartitionBackpressure``: a partition below its
    /// share, such as one just assigned, is still read). Pauses each partition whose results cannot be
    /// delivered now (its lane in the publisher is failing), so that it does not fill the buffer and pause
    /// the others; resumes it once its results go through (and it is not paused for room).
    private func applyBackpressure() {
        let outstanding = tracker.outstandingByPartition
        let failing = publisher.failingPartitions
        let everyMemberAssigned = consumer.everyMemberAssigned
        let guardHolding = crashGuard?.holding() ?? []
        let now = ContinuousClock.now
        let change = state.withLock { state -> (pause: [TopicPartition], resume: [TopicPartition], held: [TopicPartition], released: [TopicPartition], holdEndedAtLimit: Bool) in
            let held = failing.intersection(state.assigned)
            let newlyHeld = held.subtracting(state.held)
            let released = state.held.subtracting(held)
            state.held = held
            // The first-join hold ends once every member has its first assignment, or at its limit.
            var holdEndedAtLimit = false
            if let until = state.firstJoinHoldUntil, everyMemberAssigned || now >= until {
                state.firstJoinHoldUntil = nil
                holdEndedAtLimit = !everyMemberAssigned
            }
            // Stopping: everything is paused already and stays so.
            if state.stopping { return ([], [], Array(newlyHeld), Array(released), holdEndedAtLimit) }
            _ = state.room.round(outstanding: outstanding, assigned: state.assigned)
            var wanted = held.union(state.room.paused).union(guardHolding)
            if state.firstJoinHoldUntil != nil { wanted.formUnion(state.assigned) }
            let pause = wanted.subtracting(state.pausedNow)
            let resume = state.pausedNow.subtracting(wanted)
            state.pausedNow = wanted
            return (Array(pause), Array(resume), Array(newlyHeld), Array(released), holdEndedAtLimit)
        }
        let buffered = outstanding.values.reduce(0, +)
        if change.holdEndedAtLimit {
            logger.warning("reading the assigned partitions although not every group member of this process has its first assignment",
                           metadata: ["heldMs": String(Self.firstJoinHoldLimit.components.seconds * 1000)])
        }
        if !change.held.isEmpty {
            logger.warning("pausing partitions: their results cannot be delivered now", metadata: ["partitions": change.held.map(\.description).sorted().joined(separator: ",")])
        }
        if !change.released.isEmpty {
            logger.info("results deliverable again", metadata: ["partitions": change.released.map(\.description).sorted().joined(separator: ",")])
        }
        if !change.pause.isEmpty {
            logger.debug("pausing partitions", metadata: ["unfinished": String(buffered), "count": String(change.pause.count)])
            consumer.pause(change.pause)
        }
        if !change.resume.isEmpty {
            logger.debug("resuming partitions", metadata: ["unfinished": String(buffered), "count": String(change.resume.count)])
            consumer.resume(change.resume)
        }
        if !change.held.isEmpty || !change.released.isEmpty {
            let held = state.withLock { $0.held }
            statistics { $0.heldPartitions = held.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) } }
        }
    }

    /// Stops taking records: pauses everything, takes back jobs that have not started, and waits for the
    /// running ones (serving the consumer meanwhile; records it still returns are not taken).
    private func stopTaking() {
        let assigned = state.withLock { state -> [TopicPartition] in
            state.stopping = true
            state.pausedNow = state.assigned
            return Array(state.assigned)
        }
        consumer.pause(assigned)
        let discarded = takeBack { _ in true }
        if discarded > 0 {
            logger.info("records taken but not started are left for the group to read again", metadata: ["count": String(discarded)])
        }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(drainTimeoutMs))
        while dispatcher.runningCount > 0 && ContinuousClock.now < deadline && !stopNow() {
            heartbeat.beat()
            _ = try? consumer.poll(timeoutMs: 20)
        }
        if stopNow() { cutShort() }
    }

    /// The fast stop: cuts short every running job and takes back every waiting one; their records are
    /// marked abandoned, so their offsets are not committed and the group reads them again.
    private func cutShort() {
        let cut = dispatcher.stopNow()
        tracker.abandon(cut.map { (TopicPartition(topic: $0.topic, partition: $0.partition), $0.offset) })
        if !cut.isEmpty {
            logger.info("stopping now: jobs cut short (no result) and records not started are left for the group to read again", metadata: ["count": String(cut.count)])
        }
    }

    /// Stores the committable offset of every tracked partition (idempotent; used before the final commit),
    /// and marks the loop as closing: the revocation `close` brings stores what is acknowledged without
    /// waiting again (the shutdown has waited `drainTimeoutMs` for jobs and then for results already).
    /// - Returns: the offsets stored, for the final commit to name explicitly (none in the exactly-once mode).
    @discardableResult
    func storeCommittableBeforeClose() -> [TopicPartitionOffset] {
        state.withLock { $0.closing = true }
        // Exactly-once: offsets are committed only by the transactions, never stored here.
        guard transactions == nil else { return [] }
        let offsets = tracker.committable
        consumer.storeOffsets(offsets)
        return offsets
    }

    /// Exactly-once mode, each round: stops on the transactions' fatal error, and rewinds after an
    /// aborted transaction: cuts short the jobs of every assigned partition (their records are read again),
    /// drops their buffered outputs, forgets their tracked records, and seeks each partition to the offset
    /// after this member's last committed transaction (``TransactionalPublisher/rewindTargets(_:)``).
    /// - Throws: the ``KafkaTransactionError`` that stopped the transactions, or ``KafkaError/Code/fatal``
    ///   when a partition cannot be rewound (going on would skip the aborted records).
    private func serve(_ transactions: TransactionalPublisher) throws {
        if let failure = transactions.failure { throw failure }
        guard transactions.rewindRequested else { return }
        let assigned = state.withLock { Array($0.assigned) }
        let set = Set(assigned)
        let cut = dispatcher.cutShort { set.contains(TopicPartition(topic: $0.topic, partition: $0.partition)) }
        let targets = transactions.rewindTargets(assigned)
        tracker.forget(assigned)
        crashGuard?.rewound(assigned)
        let refused: [(TopicPartition, KafkaError)]
        do {
            refused = try consumer.seek(targets)
        } catch {
            throw KafkaError(.fatal, "cannot rewind the input after an aborted transaction (\(error)); stopping so that no aborted record is skipped")
        }
        if let (tp, error) = refused.first {
            throw KafkaError(.fatal, "cannot rewind \(tp) after an aborted transaction (\(error.message)); stopping so that no aborted record is skipped")
        }
        transactions.rewound()
        statistics { $0.transactionRewinds += 1 }
        logger.warning("transaction aborted: partitions rewound to the offsets after the last committed transaction; their records are read and run again", metadata: [
            "partitions": targets.map { "\($0.topicPartition)@\($0.offset)" }.sorted().joined(separator: ","), "jobsCutShort": String(cut.count),
        ])
    }

    /// Handles a rebalance, on the thread serving the consumer (the rebalance callback: it blocks that
    /// thread, never the cooperative pool, and librdkafka releases revoked partitions once it returns).
    ///
    /// - assigned: the partitions' results are produced from now on (``ResultPublisher/own(_:)``).
    /// - revoking: their waiting jobs are taken back; their running jobs are waited for, with their
    ///   results, up to `rebalanceDrainTimeoutMs` (no wait while the consumer closes, none on a fast stop);
    ///   then the jobs still running are cut short without a result; the partitions are released in the
    ///   publisher (nothing of theirs is produced any more) and the offsets whose results are acknowledged
    ///   are stored and committed (synchronously) before the callback returns and librdkafka unassigns
    ///   them. Jobs of other partitions are not touched.
    /// - lost: as revoking, without the wait and without storing offsets (the group has already given the
    ///   partitions to another member).
    ///
    /// In the exactly-once mode (``TransactionalPublisher``) nothing is stored or committed by the consumer:
    /// a revocation instead has the buffered outputs committed in a transaction, with the revoked
    /// partitions' offsets, before the partitions are released (``TransactionalPublisher/commitNow(timeoutMs:)``);
    /// a loss commits nothing more of them (their buffered outputs are dropped).
    func rebalanced(_ event: KafkaRebalanceEvent) {
        // Incremental (cooperative) rebalances often hand this member nothing new: nothing to do or count.
        switch event {
        case .assigned(let partitions), .revoking(let partitions), .lost(let partitions):
            if partitions.isEmpty { return }
        }
        statistics { $0.rebalances += 1 }
        metrics.rebalanced(event)
        switch event {
        case .assigned(let partitions):
            let paused = state.withLock { state -> Bool in
                state.assigned.formUnion(partitions)
                // Held again at the next round if its results still cannot be delivered. Not paused for room:
                // none of its records is unfinished here, so it is read even while this member is full.
                state.held.subtract(partitions)
                // Stopping, or holding the first assignments (``firstJoinHoldLimit``): paused.
                let paused = state.stopping || state.firstJoinHoldUntil != nil
                if paused { state.pausedNow.formUnion(partitions) } else { state.pausedNow.subtract(partitions) }
                return paused
            }
            // Before any of their records is taken: how each runs (a partition left uncleanly runs its
            // records one at a time).
            crashGuard?.assigned(partitions)
            // librdkafka 2.0.2 keeps a partition's pause across revoke and re-assign: set it explicitly.
            if paused { consumer.pause(partitions) } else { consumer.resume(partitions) }
            publisher.own(partitions)
            logger.info("partitions assigned", metadata: ["partitions": partitions.map(\.description).joined(separator: ",")])
        case .revoking(let partitions):
            // On a fast stop the running jobs have been (or are being) cut short: say so, not "finishing".
            logger.info(stopNow() ? "partitions revoked: the service is stopping now, running jobs were cut short without a result"
                                  : "partitions revoked: finishing their running jobs",
                        metadata: ["partitions": partitions.map(\.description).joined(separator: ",")])
            takeBack(partitions)
            let closing = state.withLock { $0.closing }
            let deadline = ContinuousClock.now.advanced(by: .milliseconds(closing ? 0 : rebalanceDrainTimeoutMs))
            // Exactly-once: a pending rewind holds the transactions, so nothing more settles; do not wait.
            while !tracker.settled(partitions) && ContinuousClock.now < deadline && !stopNow() && transactions?.rewindRequested != true {
                heartbeat.beat()
                publisher.retryBacklog()
                Thread.sleep(forTimeInterval: 0.005)
            }
            // At the bound: the jobs still running get no result (their records are read again by the next
            // owner), and nothing of these partitions is produced once they are released.
            let cut = cutShort(partitions)
            if cut > 0 {
                logger.warning(closing ? "partitions revoked at close: jobs still running were cut short without a result; their next owner reads their records again"
                                       : "partitions revoked: jobs still running at the rebalance drain timeout were cut short without a result; their next owner reads their records again",
                               metadata: ["partitions": partitions.map(\.description).joined(separator: ","), "count": String(cut),
                                          "rebalanceDrainTimeoutMs": String(rebalanceDrainTimeoutMs)])
            }
            // Exactly-once: commit now what is buffered, with the revoked partitions' offsets, before they go
            // (an abort here leaves their records to the next owner, and the others are rewound next round).
            if let transactions, !stopNow() {
                if !transactions.commitNow(timeoutMs: max(rebalanceDrainTimeoutMs, 1000)) {
                    logger.warning("partitions revoked: their finished results could not be committed before they go (a transaction aborted or failed, or did not end in time); their records run again on their next owner",
                                   metadata: ["partitions": partitions.map(\.description).joined(separator: ",")])
                }
            }
            let dropped = publisher.release(partitions)
            if dropped > 0 {
                logger.warning("partitions revoked: results not yet produced are dropped; their next owner reads their records again", metadata: ["count": String(dropped)])
            }
            // Store what is acknowledged now and commit it before the partitions go. The commit librdkafka
            // makes after the unassign alone was seen refused (REBALANCE_IN_PROGRESS, join state
            // wait-incr-unassign-to-complete, librdkafka 2.0.2's mock cluster under load): the new owner then
            // ran again records whose results were delivered. A synchronous commit here, before the callback
            // returns, goes through more often, but the mock refuses it too at times (counted in
            // revocationCommitFailures). Skipped while closing (the shutdown commits) and on a
            // fast stop.
            let set = Set(partitions)
            let offsets = transactions == nil ? tracker.committable.filter { set.contains($0.topicPartition) } : []
            consumer.storeOffsets(offsets)
            if !offsets.isEmpty && !closing && !stopNow() {
                do {
                    // Named explicitly (``KafkaConsumer/commit(_:)``): sent even where librdkafka believes
                    // them committed, which a retried older commit may have set back.
                    try consumer.commit(offsets)
                } catch {
                    statistics { $0.revocationCommitFailures += 1 }
                    metrics.revocationCommitFailures.increment()
                    logger.warning("partitions revoked: committing their offsets failed; librdkafka commits them again at the unassign, and records whose commit is refused run again on their next owner",
                                   metadata: ["partitions": partitions.map(\.description).joined(separator: ","), "error": "\(error)"])
                }
            }
            // The process is alive and these partitions' jobs are finished or cut short: the guard's
            // markers say the partitions were left cleanly.
            crashGuard?.revoked(partitions, outstanding: tracker.outstandingByPartition)
            forget(partitions)
        case .lost(let partitions):
            logger.warning("partitions lost: their running jobs are cut short without a result and their offsets are not committed", metadata: ["partitions": partitions.map(\.description).joined(separator: ",")])
            takeBack(partitions)
            let cut = cutShort(partitions)
            publisher.release(partitions)
            if cut > 0 { logger.warning("partitions lost: jobs cut short", metadata: ["count": String(cut)]) }
            crashGuard?.lost(partitions)
            forget(partitions)
        }
        let assigned = state.withLock { Array($0.assigned) }
        statistics { $0.assignedPartitions = assigned.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) } }
    }

    private func takeBack(_ partitions: [TopicPartition]) {
        let set = Set(partitions)
        takeBack { set.contains(TopicPartition(topic: $0.topic, partition: $0.partition)) }
    }

    /// Takes back waiting jobs that match (they never start) and marks their records abandoned, so their
    /// offsets are not committed. Returns how many.
    @discardableResult
    private func takeBack(where matches: @Sendable (RecordSource) -> Bool) -> Int {
        let discarded = dispatcher.discardWaiting(where: matches)
        tracker.abandon(discarded.map { (TopicPartition(topic: $0.topic, partition: $0.partition), $0.offset) })
        return discarded.count
    }

    /// Cuts short the running (and waiting) jobs of `partitions` (``JobDispatcher/cutShort(where:)``) and
    /// marks their records abandoned; counts them in ``PushWorkerService/Statistics/jobsCutShortByRebalance``
    /// and `pushworker_jobs_cut_short_by_rebalance_total`.
    /// Returns how many.
    private func cutShort(_ partitions: [TopicPartition]) -> Int {
        let set = Set(partitions)
        let cut = dispatcher.cutShort { set.contains(TopicPartition(topic: $0.topic, partition: $0.partition)) }
        tracker.abandon(cut.map { (TopicPartition(topic: $0.topic, partition: $0.partition), $0.offset) })
        if !cut.isEmpty {
            statistics { $0.jobsCutShortByRebalance += cut.count }
            metrics.jobsCutShortByRebalance.increment(by: Double(cut.count))
        }
        return cut.count
    }

    private func forget(_ partitions: [TopicPartition]) {
        tracker.forget(partitions)
        state.withLock { state in
            partitions.forEach { state.assigned.remove($0) }
            state.held.subtract(partitions)
            state.pausedNow.subtract(partitions)
            state.room.forget(partitions)
        }
    }
}
