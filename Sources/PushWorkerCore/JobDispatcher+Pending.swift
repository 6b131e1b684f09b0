// The jobs the dispatcher moves between its queues, and the runs of those holding a slot.

extension JobDispatcher {
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
}
