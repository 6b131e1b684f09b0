import Foundation
import PushWorkerTesting
import Testing
@testable import PushWorkerCore

/// `apns-collapse-id` in `JobDispatcher`: among waiting records of one key with the same collapse id only
/// the newest runs; the others get `noData` / `collapsed` at once.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct JobDispatcherCollapseTests {
    /// Logs which offsets ran; jobs of type `held` wait for the gate.
    final class Runs: Sendable {
        let started = Locked<[Int64]>([])
        let gate = Gate()

        func registry(maxConcurrent: Int? = nil) -> WorkerRegistry {
            var registry = WorkerRegistry(defaultBudget: .seconds(20))
            registry.register(type: "held", worker: ClosureWorker { [self] job in
                started.withLock { $0.append(job.source.offset) }
                await gate.wait()
                return .newData
            }, maxConcurrent: maxConcurrent)
            registry.register(type: "work", worker: ClosureWorker { [self] job in
                started.withLock { $0.append(job.source.offset) }
                return .newData
            }, maxConcurrent: maxConcurrent)
            return registry
        }
    }

    func record(_ offset: Int64, key: String?, collapseId: String? = nil, type: String = "work") -> InputRecord {
        var headers: [(name: String, value: [UInt8]?)] = []
        if let collapseId { headers.append(("apns-collapse-id", Array(collapseId.utf8))) }
        return InputRecord(source: source(offset), key: key.map { Array($0.utf8) }, value: Payload.silent(type: type), headers: headers, receivedAtMs: WallClock.nowMs())
    }

    func dispatcher(_ runs: Runs, _ collector: ResultCollector, maxInFlight: Int = 8, maxConcurrent: Int? = nil, collapse: Bool = true) -> JobDispatcher {
        JobDispatcher(registry: runs.registry(maxConcurrent: maxConcurrent), maxInFlight: maxInFlight, executor: BudgetedExecutor(), collapse: collapse, onResult: collector.onResult)
    }

    /// Every offset in `offsets` has exactly one result.
    func expectOneResultEach(_ collector: ResultCollector, _ offsets: [Int64]) {
        let all = collector.all.map(\.source.offset)
        #expect(all.sorted() == offsets.sorted(), "one result per record: \(all)")
    }

    @Test func onlyTheNewestWaitingRecordOfAKeyAndCollapseIdRuns() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        // Offset 0 runs (held) with collapse id c1: a running job is never collapsed.
        dispatcher.submit([record(0, key: "K", collapseId: "c1", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([record(1, key: "K", collapseId: "c1"), record(2, key: "K", collapseId: "c2"), record(3, key: "K", collapseId: "c1")])
        dispatcher.submit([record(4, key: "K", collapseId: "c1"), record(5, key: "K")])
        // 1 and 3 are collapsed at once, while 0 still runs; 2, 4 and 5 wait.
        #expect(collector.all.map(\.source.offset).sorted() == [1, 3])
        #expect(dispatcher.waitingCount == 3)
        let one = try #require(collector.result(offset: 1)), three = try #require(collector.result(offset: 3))
        for (result, newer) in [(one, 3), (three, 4)] {
            #expect(result.result == .noData && result.reason == .collapsed)
            #expect(result.worker == nil && result.startedAtMs == nil && result.durationMs == 0)
            #expect(result.detail?.contains("pushes/0 offset \(newer)") == true, "the detail names the newer record: \(result.detail ?? "nil")")
            #expect(result.detail?.contains("'c1'") == true)
        }
        await runs.gate.open()
        #expect(await idle(dispatcher))
        // The key's survivors ran in offset order, the newest of c1 last of them.
        #expect(runs.started.value == [0, 2, 4, 5])
        expectOneResultEach(collector, [0, 1, 2, 3, 4, 5])
        #expect(collector.result(offset: 0)?.result == .newData)
    }

    @Test func differentKeysAndRecordsWithoutAKeyDoNotCollapse() async throws {
        let runs = Runs(), collector = ResultCollector()
        // One slot: everything after the held job waits for it.
        let dispatcher = dispatcher(runs, collector, maxInFlight: 1)
        dispatcher.submit([record(0, key: "X", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([
            record(1, key: "K", collapseId: "c"), record(2, key: "J", collapseId: "c"),
            record(3, key: nil, collapseId: "c"), record(4, key: nil, collapseId: "c"),
            record(5, key: "K", collapseId: "c"),
        ])
        // Only K's older record (1, waiting for a slot while holding its key) is collapsed, by 5.
        #expect(collector.all.map(\.source.offset) == [1])
        #expect(collector.result(offset: 1)?.reason == .collapsed)
        await runs.gate.open()
        #expect(await idle(dispatcher))
        #expect(Set(runs.started.value) == [0, 2, 3, 4, 5])
        expectOneResultEach(collector, [0, 1, 2, 3, 4, 5])
    }

    @Test func aCollapsedRecordWaitingForItsWorkersLimitHandsOnTheWorkersRoom() async throws {
        let runs = Runs(), collector = ResultCollector()
        // Each worker runs one job at a time: 1 and 2 wait behind 0 (same worker, other keys), 1 holding key K.
        let dispatcher = dispatcher(runs, collector, maxConcurrent: 1)
        dispatcher.submit([record(0, key: "X", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([record(1, key: "K", collapseId: "c", type: "held"), record(2, key: "Y", type: "held"), record(3, key: "K", collapseId: "c", type: "work")])
        #expect(collector.all.map(\.source.offset) == [1])
        await runs.gate.open()
        // When 0 ends, the collapsed 1 is dropped, and the held worker's room goes to 2 (and K's turn to 3).
        #expect(await idle(dispatcher))
        #expect(Set(runs.started.value) == [0, 2, 3])
        expectOneResultEach(collector, [0, 1, 2, 3])
    }

    @Test func takingBackWaitingJobsLeavesOutCollapsedOnes() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        dispatcher.submit([record(0, key: "K", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([record(1, key: "K", collapseId: "c"), record(2, key: "K", collapseId: "c")])
        // 1 has its result (collapsed): only 2 is taken back without one.
        let taken = dispatcher.discardWaiting { _ in true }
        #expect(taken.map(\.offset) == [2])
        #expect(dispatcher.waitingCount == 0)
        await runs.gate.open()
        #expect(await idle(dispatcher))
        #expect(runs.started.value == [0])
        expectOneResultEach(collector, [0, 1])
    }

    @Test func collapseOffRunsEveryRecord() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector, collapse: false)
        dispatcher.submit([record(0, key: "K", type: "held")])
        #expect(await eventually { runs.started.value == [0] })
        dispatcher.submit([record(1, key: "K", collapseId: "c"), record(2, key: "K", collapseId: "c")])
        #expect(collector.count == 0)
        await runs.gate.open()
        #expect(await idle(dispatcher))
        #expect(runs.started.value == [0, 1, 2])
    }

    @Test func aCollapseIdOverAPNsLimitIsInvalidPayload() async throws {
        let runs = Runs(), collector = ResultCollector()
        let dispatcher = dispatcher(runs, collector)
        dispatcher.submit([
            record(0, key: "K", collapseId: String(repeating: "c", count: 64)),
            record(1, key: "K", collapseId: String(repeating: "c", count: 65)),
        ])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 0)?.result == .newData)
        let tooLong = try #require(collector.result(offset: 1))
        #expect(tooLong.result == .failed && tooLong.reason == .invalidPayload)
        #expect(tooLong.detail?.contains("the apns-collapse-id header is 65 bytes; the limit is 64 bytes") == true, "\(tooLong.detail ?? "nil")")
        #expect(runs.started.value == [0])
    }

    @Test func theCollapseIdHeaderIsReadExactly() {
        let first = PushHeaders(RecordHeaders([("apns-collapse-id", Array("a\u{0}b".utf8)), ("apns-collapse-id", Array("later".utf8))]))
        #expect(first.apnsCollapseId == Array("a\u{0}b".utf8))
        #expect(first.problem == nil)
        #expect(PushHeaders(RecordHeaders([("apns-collapse-id", [])])).apnsCollapseId == nil, "an empty collapse id collapses nothing")
        #expect(PushHeaders(RecordHeaders([("apns-collapse-id", nil)])).apnsCollapseId == nil)
        let long = PushHeaders(RecordHeaders([("apns-collapse-id", Array(repeating: 0x63, count: 65))]))
        #expect(long.apnsCollapseId == nil && long.problem?.contains("apns-collapse-id") == true)
        #expect(PushHeaders.maxCollapseIdBytes == 64)
    }
}
