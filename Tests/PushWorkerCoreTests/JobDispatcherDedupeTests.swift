import Foundation
import PushWorkerTesting
import Testing
@testable import PushWorkerCore

/// The `apns-id` dedupe window in `JobDispatcher`: a repeat within the window gets `noData` / `duplicate`
/// naming the first record; redriven records, repeats after a failed first run and repeats after the window
/// run.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct JobDispatcherDedupeTests {
    /// Logs which offsets ran; a job whose `fail` data key is true fails, one of type `held` waits for the gate.
    final class Runs: Sendable {
        let started = Locked<[Int64]>([])
        let gate = Gate()

        var registry: WorkerRegistry {
            var registry = WorkerRegistry(defaultBudget: .seconds(20))
            let body: @Sendable (Job) async throws -> WorkerOutcome = { [self] job in
                started.withLock { $0.append(job.source.offset) }
                if job.type == "held" { await gate.wait() }
                return String(decoding: job.value, as: UTF8.self).contains(#""fail":true"#) ? .failed("broken") : .newData
            }
            registry.register(type: "work", worker: ClosureWorker(body))
            registry.register(type: "held", worker: ClosureWorker(body))
            return registry
        }
    }

    func record(_ offset: Int64, apnsId: String?, key: String? = nil, type: String = "work", fail: Bool = false, attempts: String? = nil, partition: Int32 = 0) -> InputRecord {
        var headers: [(name: String, value: [UInt8]?)] = []
        if let apnsId { headers.append(("apns-id", Array(apnsId.utf8))) }
        if let attempts { headers.append((Job.attemptsHeader, Array(attempts.utf8))) }
        return InputRecord(
            source: source(offset, partition: partition), key: key.map { Array($0.utf8) },
            value: Payload.silent(type: type, extra: fail ? #","fail":true"# : ""), headers: headers, receivedAtMs: WallClock.nowMs())
    }

    func dispatcher(_ runs: Runs, _ collector: ResultCollector, dedupe: DedupeConfiguration? = DedupeConfiguration()) -> JobDispatcher {
        JobDispatcher(registry: runs.registry, maxInFlight: 8, executor: BudgetedExecutor(), dedupe: dedupe, onResult: collector.onResult)
    }

    @Test func aRepeatedApnsIdWithinTheWindowRunsOnce() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        // The first (offset 0) is still running when its repeats come, in another partition too.
        dispatcher.submit([record(0, apnsId: "m-1", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([record(1, apnsId: "m-1"), record(2, apnsId: "m-2"), record(7, apnsId: "m-1", key: "K", partition: 1), record(3, apnsId: nil), record(4, apnsId: nil)])
        #expect(dispatcher.dedupeEntryCount == 2)
        await runs.gate.open()
        #expect(await idle(dispatcher))
        #expect(Set(runs.started.value) == [0, 2, 3, 4], "records without an apns-id are never deduped")
        #expect(collector.count == 6)
        for offset: Int64 in [1, 7] {
            let repeatResult = try #require(collector.result(offset: offset))
            #expect(repeatResult.result == .noData && repeatResult.reason == .duplicate)
            #expect(repeatResult.messageId == "m-1" && repeatResult.worker == nil && repeatResult.startedAtMs == nil)
            #expect(repeatResult.detail?.contains("repeats the record at pushes/0 offset 0") == true, "\(repeatResult.detail ?? "nil")")
            #expect(repeatResult.detail?.contains("300000 ms") == true)
        }
        #expect(collector.result(offset: 0)?.result == .newData)
    }

    @Test func dedupeIsOffByDefault() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector, dedupe: nil)
        dispatcher.submit([record(0, apnsId: "m-1"), record(1, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(Set(runs.started.value) == [0, 1])
        #expect(dispatcher.dedupeEntryCount == 0)
    }

    @Test func redrivenRecordsAreNeverDeduped() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        dispatcher.submit([record(0, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        // pushworker-attempts: 1 (attempt 2, a dead letter sent back by redrive) runs; so does attempt 3.
        dispatcher.submit([record(1, apnsId: "m-1", attempts: "1"), record(2, apnsId: "m-1", attempts: "2")])
        #expect(await idle(dispatcher))
        #expect(Set(runs.started.value) == [0, 1, 2])
        #expect(collector.result(offset: 1)?.attempt == 2)
        // A redriven record does not enter the window either: an attempt-1 repeat still names offset 0.
        dispatcher.submit([record(3, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 3)?.detail?.contains("offset 0") == true)
    }

    @Test func aRepeatRunsAfterTheFirstFailedButNotWhileItRuns() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        dispatcher.submit([record(0, apnsId: "m-1", type: "held", fail: true)])
        #expect(await eventually { runs.started.value == [0] })
        // While the first runs its outcome is unknown: the repeat is a duplicate.
        dispatcher.submit([record(1, apnsId: "m-1")])
        #expect(collector.result(offset: 1)?.reason == .duplicate)
        await runs.gate.open()
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 0)?.result == .failed)
        // The first failed: it left the window, so the next repeat runs (and becomes the first).
        dispatcher.submit([record(2, apnsId: "m-1"), record(3, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(runs.started.value == [0, 2])
        #expect(collector.result(offset: 3)?.detail?.contains("offset 2") == true)
    }

    @Test func theFirstRecordReadAgainIsNotARepeatOfItself() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        // As after a rebalance that brought its partition back before its offset was committed.
        dispatcher.submit([record(0, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        dispatcher.submit([record(0, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(runs.started.value == [0, 0])
    }

    @Test func aRepeatAfterTheWindowRuns() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector, dedupe: DedupeConfiguration(window: .milliseconds(50)))
        dispatcher.submit([record(0, apnsId: "m-1"), record(1, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 1)?.reason == .duplicate)
        let windowEnd = ContinuousClock.now.advanced(by: .milliseconds(60))
        #expect(await eventually { ContinuousClock.now >= windowEnd })
        dispatcher.submit([record(2, apnsId: "m-1")])
        #expect(await idle(dispatcher))
        #expect(runs.started.value == [0, 2])
    }

    @Test func aFirstRecordAnsweredAtOnceWithFailedLeavesTheWindow() async throws {
        let collector = ResultCollector()
        var registry = WorkerRegistry()
        // A noop worker without delay answers inside submit (no task): its failed outcome is known there.
        registry.register(type: "work", worker: NoopWorker(outcome: WorkerOutcome(.failed, reason: "down")))
        registry.register(type: "fine", worker: NoopWorker(outcome: WorkerOutcome(.newData)))
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), dedupe: DedupeConfiguration(), onResult: collector.onResult)
        dispatcher.submit([record(0, apnsId: "m-1"), record(1, apnsId: "m-1"), record(2, apnsId: "m-2", type: "fine"), record(3, apnsId: "m-2", type: "fine")])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 1)?.reason?.rawValue == "down", "the repeat of a failed first runs")
        #expect(collector.result(offset: 3)?.reason == .duplicate, "the repeat of a successful first does not")
    }
}
