import PushWorkerCore
import PushWorkerKafka

/// The crash guard's decisions, a value with no effects (``CrashGuard`` is its driver): which records of
/// each partition go to the dispatcher, which run alone, which are not run again, and which markers
/// (``CrashGuardMarker``) must be committed before the records it lets go start.
///
/// A partition whose last owner left it cleanly runs as usual under a *lease*: before a record at or past
/// the lease starts, a marker with a lease further on is written (one write per ``Settings/leaseRecords``
/// records). A partition whose last owner did not (a marker without `clean`) runs its records below that
/// owner's lease one at a time, each after a marker naming it: a process that dies then is found running
/// that record by the next owner, who counts a death for it; at ``Settings/deathLimit`` deaths the record
/// gets `failed` / `workerCrashed` without running.
struct CrashGuardState {
    /// The guard's settings.
    struct Settings: Equatable, Sendable {
        /// Deaths of a process with the record running after which it is not run again.
        var deathLimit: Int
        /// How far past the highest offset handed over a lease reaches.
        var leaseRecords: Int64
    }

    /// A partition whose records below `until` run one at a time.
    struct Isolation {
        /// The lease of the owner that did not stop cleanly: no record at or past it had started.
        var until: Int64
        /// Records below it had each run alone and ended (an earlier owner's isolation): they go at once.
        var cleared: Int64 = .min
        /// The record that owner ran alone when it died, and the deaths found with it running.
        var suspect: (offset: Int64, deaths: Int)?
        /// Where running alone ends: ``Settings/leaseRecords`` past the first record run alone (and past the
        /// suspect), at most ``until``; set at that first record.
        var windowEnd: Int64?
        /// Records taken and not yet handed over, in offset order.
        var queue: [InputRecord] = []
        var head = 0
        /// The offset last handed over (run or answered), if any.
        var lastReleased: Int64?
        /// The lowest record answered `workerCrashed` without running here. No marker says that records
        /// past it ran alone and ended (``clamped(_:)``): if its offset is not yet committed when this process
        /// ends, its next owner reads it again and must not run it at once, where a death is pinned on no
        /// record and no marker changes (a crash loop without end).
        var condemnedFloor: Int64?
        /// Whether the last marker written names ``lastReleased`` as running: once it is answered and
        /// nothing else is waiting, a marker that clears it replaces it (``CrashGuardState/release(outstanding:into:highest:)``),
        /// so that an end that writes nothing (a lost group, a second SIGTERM) is not counted as its death.
        var namesRunning = false

        var waiting: Int { queue.count - head }

        /// `cleared` as a marker may say it: never past ``condemnedFloor``.
        func clamped(_ cleared: Int64) -> Int64 { min(cleared, condemnedFloor ?? .max) }
    }

    enum Mode {
        /// Records go to the dispatcher at once; `lease` is the lease written (nil: none yet), `cleared` where
        /// this owner's isolation ended (written with each lease, so that a later owner starts there).
        case normal(lease: Int64?, cleared: Int64?)
        case isolating(Isolation)
    }

    /// What one round lets go, and what must be written first.
    struct Round {
        /// Markers to commit before any record below is handed over.
        var writes: [OffsetAndMetadata] = []
        /// Records for the dispatcher, in offset order per partition.
        var submit: [InputRecord] = []
        /// Records answered `failed` / `workerCrashed` without running, with their deaths.
        var condemned: [(record: InputRecord, deaths: Int)] = []
        /// Records about to run again after deaths found with them running, with the count.
        var suspects: [(record: InputRecord, deaths: Int)] = []
        /// Partitions whose records run concurrently again.
        var isolationEnded: [TopicPartition] = []
        /// How many of ``submit`` run alone.
        var isolated = 0
        /// Whether ``submit`` is the round's records as they were taken, nothing held back or let go
        /// besides (no partition isolating).
        var passedThrough = false
    }

    /// What an assignment found.
    struct Finding: Equatable {
        var partition: TopicPartition
        /// The lease of the owner that did not stop cleanly.
        var until: Int64
        /// The record it ran alone when it died, if any, and the deaths found with it running.
        var suspectOffset: Int64?
        var deaths: Int
    }

    let settings: Settings
    private(set) var partitions: [TopicPartition: Mode] = [:]
    /// How many partitions are isolating (a round with none skips their bookkeeping).
    private(set) var isolatingCount = 0

    init(settings: Settings) { self.settings = settings }

    /// Partitions assigned, with the markers their last owners left (nil: none, or not readable).
    mutating func assigned(_ markers: [TopicPartition: CrashGuardMarker?]) -> [Finding] {
        var findings: [Finding] = []
        for (tp, marker) in markers {
            if case .isolating = partitions[tp] { isolatingCount -= 1 }
            guard let marker else { partitions[tp] = .normal(lease: nil, cleared: nil); continue }
            switch marker.ending {
            case .clean:
                partitions[tp] = .normal(lease: nil, cleared: nil)
            case .open(let cleared):
                // Never past the lease (a marker is any client's bytes): what is past it runs under a new one.
                partitions[tp] = .isolating(Isolation(until: marker.lease, cleared: min(cleared ?? .min, marker.lease), suspect: nil))
                isolatingCount += 1
                findings.append(Finding(partition: tp, until: marker.lease, suspectOffset: nil, deaths: 0))
            case .running(let offset, let deaths, let cleared):
                let found = deaths + 1
                partitions[tp] = .isolating(Isolation(until: marker.lease, cleared: min(cleared ?? .min, offset, marker.lease), suspect: (offset, found)))
                isolatingCount += 1
                findings.append(Finding(partition: tp, until: marker.lease, suspectOffset: offset, deaths: found))
            }
        }
        return findings.sorted { ($0.partition.topic, $0.partition.partition) < ($1.partition.topic, $1.partition.partition) }
    }

    /// Held records of one isolating partition at which it is paused on the consumer: they wait longer to
    /// run alone than the consumer takes to fetch more.
    static let holdPauseAt = 512
    /// Held records at which a partition paused for them is read again. Not at each record handed over:
    /// librdkafka drops a paused partition's fetched records and fetches again from its position on resume,
    /// a fetch round trip (up to `fetch.wait.max.ms`) per resume.
    static let holdResumeAt = 128

    /// Isolating partitions paused on the consumer because they hold ``holdPauseAt`` records or more, until
    /// they hold ``holdResumeAt`` or fewer.
    private(set) var holding: Set<TopicPartition> = []

    /// Updates and returns ``holding`` from what each isolating partition holds now.
    mutating func holdingPartitions() -> Set<TopicPartition> {
        guard isolatingCount > 0 || !holding.isEmpty else { return [] }
        var held: Set<TopicPartition> = []
        for (tp, mode) in partitions {
            guard case .isolating(let isolation) = mode else { continue }
            let waiting = isolation.waiting
            if waiting >= Self.holdPauseAt || (holding.contains(tp) && waiting > Self.holdResumeAt) { held.insert(tp) }
        }
        holding = held
        return held
    }

    /// One round of the consumer: `records` just taken (offset order per partition), and the records of
    /// each partition handed over and not yet answered (an isolating partition hands over its next record
    /// once that is zero).
    mutating func round(_ records: [InputRecord], outstanding: [TopicPartition: Int]) -> Round {
        var round = Round()
        var highest: [TopicPartition: Int64] = [:]
        guard isolatingCount > 0 else {
            // Nothing held back: every record goes, in the order taken (the hot path).
            round.submit = records
            round.passedThrough = true
            Self.highestOffsets(of: records, into: &highest)
            for (tp, offset) in highest { lease(tp, through: offset, into: &round) }
            return round
        }
        var passing: [InputRecord] = []
        var last: (tp: TopicPartition, isolating: Bool)?
        for record in records {
            let source = record.source
            if last == nil || last?.tp.partition != source.partition || last?.tp.topic != source.topic {
                let tp = TopicPartition(topic: source.topic, partition: source.partition)
                var isolating = false
                if case .isolating = partitions[tp] { isolating = true }
                last = (tp, isolating)
            }
            guard let (tp, isolating) = last else { continue }
            if isolating, case .isolating(var isolation) = partitions[tp] {
                partitions[tp] = .normal(lease: nil, cleared: nil)  // no copy of the queue on append
                isolation.queue.append(record)
                partitions[tp] = .isolating(isolation)
            } else {
                passing.append(record)
            }
        }
        round.submit = passing
        Self.highestOffsets(of: passing, into: &highest)
        release(outstanding: outstanding, into: &round, highest: &highest)
        for (tp, offset) in highest { lease(tp, through: offset, into: &round) }
        return round
    }

    /// The highest offset of each partition among `records` (taken in runs of one partition: the table is
    /// written once per run, not once per record).
    private static func highestOffsets(of records: [InputRecord], into highest: inout [TopicPartition: Int64]) {
        var run: (topic: String, partition: Int32, highest: Int64)?
        func flush() {
            guard let run else { return }
            let tp = TopicPartition(topic: run.topic, partition: run.partition)
            highest[tp] = max(highest[tp] ?? run.highest, run.highest)
        }
        for record in records {
            let source = record.source
            if let current = run, current.partition == source.partition, current.topic == source.topic {
                if source.offset > current.highest { run?.highest = source.offset }
            } else {
                flush()
                run = (source.topic, source.partition, source.offset)
            }
        }
        flush()
    }

    /// Hands over, for each isolating partition, the records below its cleared offset at once, or else its
    /// next record alone once nothing of the partition is out; past the window, the rest at once.
    private mutating func release(outstanding: [TopicPartition: Int], into round: inout Round, highest: inout [TopicPartition: Int64]) {
        for (tp, mode) in partitions {
            guard case .isolating(var isolation) = mode else { continue }
            guard isolation.waiting > 0 else {
                // Nothing waits: once the record run alone is answered, its marker gives way to one that
                // clears it.
                if isolation.namesRunning, let last = isolation.lastReleased, (outstanding[tp] ?? 0) == 0 {
                    isolation.namesRunning = false
                    let cleared = isolation.clamped(max(isolation.cleared, last + 1))
                    round.writes.append(OffsetAndMetadata(tp, offset: isolation.until, metadata: CrashGuardMarker(
                        lease: isolation.until, ending: .open(cleared: cleared == .min ? nil : cleared)).bytes))
                    partitions[tp] = .isolating(isolation)
                }
                continue
            }
            var passed = false
            while isolation.waiting > 0 {
                let record = isolation.queue[isolation.head]
                let offset = record.source.offset
                if offset < isolation.cleared {
                    // Ran alone and ended under an earlier owner: not a suspect.
                    isolation.head += 1
                    round.submit.append(record)
                    highest[tp] = max(highest[tp] ?? offset, offset)
                    passed = true
                    continue
                }
                if isolation.windowEnd == nil && offset < isolation.until {
                    var end = min(isolation.until, offset.addingReportingOverflow(settings.leaseRecords).partialValue)
                    if let suspect = isolation.suspect, suspect.offset >= end, suspect.offset < isolation.until { end = suspect.offset + 1 }
                    isolation.windowEnd = end
                }
                if offset >= min(isolation.windowEnd ?? isolation.until, isolation.until) {
                    // Past every record the dead owner may have started, or past the window: the rest
                    // runs concurrently; a later owner starts running alone where this window ended. Not
                    // while the last record run alone is out: its marker must stay until it ends.
                    guard !passed, (outstanding[tp] ?? 0) == 0 else { break }
                    let rest = isolation.queue[isolation.head...]
                    round.submit.append(contentsOf: rest)
                    if let top = rest.map(\.source.offset).max() { highest[tp] = max(highest[tp] ?? top, top) }
                    partitions[tp] = .normal(lease: nil, cleared: isolation.windowEnd.map(isolation.clamped))
                    isolatingCount -= 1
                    round.isolationEnded.append(tp)
                    break
                }
                // Alone: nothing else of the partition out, nothing passed this round.
                guard !passed, (outstanding[tp] ?? 0) == 0 else { break }
                isolation.head += 1
                isolation.lastReleased = offset
                let deaths = isolation.suspect.flatMap { $0.offset == offset ? $0.deaths : nil } ?? 0
                if deaths >= settings.deathLimit {
                    round.condemned.append((record, deaths))
                    isolation.condemnedFloor = min(isolation.condemnedFloor ?? offset, offset)
                    // The marker names it with its deaths (the next owner counts one more): read again before
                    // its offset is committed, it is answered again without running. It stays when the
                    // partition goes idle.
                    let cleared = isolation.clamped(offset)
                    round.writes.append(OffsetAndMetadata(tp, offset: isolation.until, metadata: CrashGuardMarker(
                        lease: isolation.until, ending: .running(offset: offset, deaths: deaths - 1, cleared: cleared == .min ? nil : cleared)).bytes))
                    isolation.namesRunning = false
                } else {
                    // Every record below it has been answered (it goes once nothing is out).
                    let cleared = isolation.clamped(offset)
                    round.writes.append(OffsetAndMetadata(tp, offset: isolation.until, metadata: CrashGuardMarker(
                        lease: isolation.until, ending: .running(offset: offset, deaths: deaths, cleared: cleared == .min ? nil : cleared)).bytes))
                    isolation.namesRunning = true
                    round.submit.append(record)
                    round.isolated += 1
                    if deaths > 0 { round.suspects.append((record, deaths)) }
                }
                break
            }
            guard case .isolating = partitions[tp] else { continue }
            if isolation.head > 1024 && isolation.head * 2 > isolation.queue.count {
                isolation.queue.removeFirst(isolation.head)
                isolation.head = 0
            }
            partitions[tp] = .isolating(isolation)
        }
    }

    /// A new lease for a partition running as usual when a record at or past its lease is handed over.
    private mutating func lease(_ tp: TopicPartition, through offset: Int64, into round: inout Round) {
        var current: Int64?
        var cleared: Int64?
        switch partitions[tp] {
        case .normal(let lease, let end)?: (current, cleared) = (lease, end)
        // Records let go while isolating are below its lease (the marker it keeps writing).
        case .isolating?: return
        case nil: break
        }
        if let current, offset < current { return }
        let next = offset.addingReportingOverflow(1 + settings.leaseRecords).partialValue
        partitions[tp] = .normal(lease: next, cleared: cleared)
        round.writes.append(OffsetAndMetadata(tp, offset: next, metadata: CrashGuardMarker(lease: next, ending: .open(cleared: cleared)).bytes))
    }

    /// Partitions revoked (their jobs drained or cut short, the process alive): the markers that say so.
    /// A partition still isolating keeps its lease, and its suspect with its deaths until it is passed
    /// (answered: handed over and nothing of the partition outstanding).
    mutating func revoked(_ tps: [TopicPartition], outstanding: [TopicPartition: Int]) -> [OffsetAndMetadata] {
        var writes: [OffsetAndMetadata] = []
        for tp in tps {
            guard let mode = partitions.removeValue(forKey: tp) else { continue }
            let marker: CrashGuardMarker
            switch mode {
            case .normal(let lease, _):
                marker = CrashGuardMarker(lease: lease ?? 0, ending: .clean)
            case .isolating(let isolation):
                isolatingCount -= 1
                let released = isolation.lastReleased ?? Int64.min
                // Records run alone and answered are cleared for the next owner.
                var cleared = isolation.cleared
                if let last = isolation.lastReleased { cleared = max(cleared, (outstanding[tp] ?? 0) == 0 ? last + 1 : last) }
                cleared = isolation.clamped(cleared)
                if let suspect = isolation.suspect, released < suspect.offset || (released == suspect.offset && (outstanding[tp] ?? 0) > 0) {
                    // The next owner counts one more death on reading `running`: write one fewer.
                    cleared = min(cleared, suspect.offset)
                    marker = CrashGuardMarker(lease: isolation.until, ending: .running(
                        offset: suspect.offset, deaths: suspect.deaths - 1, cleared: cleared == .min ? nil : cleared))
                } else {
                    marker = CrashGuardMarker(lease: isolation.until, ending: .open(cleared: cleared == .min ? nil : cleared))
                }
            }
            writes.append(OffsetAndMetadata(tp, offset: marker.lease, metadata: marker.bytes))
        }
        return writes
    }

    /// Partitions lost (another member owns them already): forgotten, nothing written.
    mutating func lost(_ tps: [TopicPartition]) {
        for tp in tps {
            if case .isolating = partitions.removeValue(forKey: tp) { isolatingCount -= 1 }
        }
    }

    /// Partitions rewound after an aborted transaction: their records are read again, so the records an
    /// isolating partition holds are dropped (the consumer hands them over again).
    mutating func rewound(_ tps: [TopicPartition]) {
        for tp in tps {
            guard case .isolating(var isolation) = partitions[tp] else { continue }
            isolation.queue.removeAll()
            isolation.head = 0
            partitions[tp] = .isolating(isolation)
        }
    }
}
