import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// The whole pipeline on an embedded cluster: consume, validate, route, budget, result, commit.
@Suite(.timeLimit(.minutes(2)))
struct ServicePipelineTests {
    static let silent = #"{"aps":{"content-available":1},"type":"content-update","contentId":"article-123"}"#

    @Test func everyOutcomeBecomesOneResult() async throws {
        // Quick workers get a budget no busy test machine runs out of (the whole suite runs in parallel on two
        // cores); the slow one gets 300 ms, the budget its timeout result reports.
        var registry = WorkerRegistry(defaultBudget: .seconds(10))
        registry.register(type: "content-update", worker: ClosureWorker { job in
            job.object["contentId"]?.stringValue == nil ? WorkerOutcome(.noData, reason: "noContentId") : .newData
        })
        registry.register(type: "throws", worker: ClosureWorker { _ in throw CocoaError(.fileNoSuchFile) })
        registry.register(type: "slow", worker: ClosureWorker { _ in try await Task.sleep(for: .seconds(10)); return .newData },
                          name: "slow", budget: .milliseconds(300))
        let harness = try await PushWorkerTestHarness.start(registry: registry)
        let inputs: [(String?, [String: String], String, String?)] = [
            (Self.silent, ["apns-id": "a"], "newData", nil),
            (#"{"aps":{"content-available":1},"type":"content-update"}"#, ["apns-id": "b"], "noData", "noContentId"),
            (#"{"aps":{"content-available":1},"type":"throws"}"#, ["apns-id": "c"], "failed", "workerError"),
            (#"{"aps":{"content-available":1},"type":"slow"}"#, ["apns-id": "d"], "failed", "timeout"),
            (#"{"aps":{"content-available":true},"type":"content-update"}"#, ["apns-id": "e"], "noData", "notSilent"),
            (Self.silent, ["apns-id": "f", "apns-expiration": "1000"], "noData", "expired"),
            (#"{"aps":{"content-available":1},"type":"nobody"}"#, ["apns-id": "g"], "noData", "noWorker"),
            (#"{"aps":{"content-available":1}"#, ["apns-id": "h"], "failed", "invalidPayload"),
            (nil, ["apns-id": "i"], "failed", "invalidPayload"),
            (#"{"aps":{"content-available":1},"x":""# + String(repeating: "y", count: 4100) + #""}"#, ["apns-id": "j"], "failed", "payloadTooLarge"),
        ]
        for (value, headers, _, _) in inputs { try await harness.produce(value, headers: headers) }
        let results = try await harness.results(count: inputs.count)
        try await harness.shutdown()
        #expect(results.count == inputs.count)
        for (_, headers, result, reason) in inputs {
            let got = results.first { $0.messageId == headers["apns-id"] }
            #expect(got?.result == result, "\(headers["apns-id"] ?? "")")
            #expect(got?.reason == reason, "\(headers["apns-id"] ?? "")")
        }
        let timeout = results.first { $0.messageId == "d" }
        #expect(timeout?.json["durationMs"]?.doubleValue == 300)
        #expect(timeout?.json["worker"]?.stringValue == "slow")
    }

    @Test func resultsAreKeyedAndHeadedLikeTheirInput() async throws {
        var registry = WorkerRegistry()
        registry.register(type: "content-update", worker: NoopWorker(outcome: .newData))
        let harness = try await PushWorkerTestHarness.start(registry: registry)
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let written = try await harness.produce(Self.silent, key: "device-42", headers: ["apns-id": "msg-1", "traceparent": traceparent])
        try await harness.produce(Self.silent)  // no key, no headers: default message id
        _ = try await harness.results(count: 2)
        let records = try await harness.readResultsTopic(count: 2)
        try await harness.shutdown()
        #expect(records.count == 2)
        let keyed = try #require(records.first { $0.key != nil })
        #expect(keyed.key == Array("device-42".utf8))
        let headers = Dictionary(keyed.headers.map { ($0.name, String(decoding: $0.value ?? [], as: UTF8.self)) }, uniquingKeysWith: { a, _ in a })
        #expect(headers["apns-id"] == "msg-1")
        #expect(headers["traceparent"] == traceparent)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(keyed.value ?? [])) as? [String: Any])
        #expect(json["messageId"] as? String == "msg-1")
        #expect(json["type"] as? String == "content-update")
        let source = try #require(json["source"] as? [String: Any])
        #expect(source["partition"] as? Int == Int(written.topicPartition.partition))
        #expect(source["offset"] as? Int == Int(written.offset))
        let plain = try #require(records.first { $0.key == nil })
        #expect(plain.headers.isEmpty)
        let plainJSON = try #require(try JSONSerialization.jsonObject(with: Data(plain.value ?? [])) as? [String: Any])
        let plainSource = try #require(plainJSON["source"] as? [String: Any])
        #expect(plainJSON["messageId"] as? String == "\(harness.configuration.inputTopics[0])-\(plainSource["partition"] ?? "")-\(plainSource["offset"] ?? "")")
    }

    @Test func sameKeyRunsInOffsetOrder() async throws {
        let log = Mutex<[(String, Int64, Bool)]>([])
        var registry = WorkerRegistry()
        registry.register(type: "step", worker: ClosureWorker { job in
            let key = String(decoding: job.key ?? [], as: UTF8.self)
            log.withLock { $0.append((key, job.source.offset, true)) }
            try await Task.sleep(for: .milliseconds(20))
            log.withLock { $0.append((key, job.source.offset, false)) }
            return .newData
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) { $0.maxInFlight = 16 }
        for index in 0..<12 {
            try await harness.produce(#"{"aps":{"content-available":1},"type":"step"}"#, key: index % 2 == 0 ? "even" : "odd")
        }
        _ = try await harness.results(count: 12)
        try await harness.shutdown()
        let events = log.withLock { $0 }
        for key in ["even", "odd"] {
            let mine = events.filter { $0.0 == key }
            // Strictly alternating start/end, offsets increasing: never two of one key at once.
            for (index, event) in mine.enumerated() { #expect(event.2 == (index % 2 == 0)) }
            let starts = mine.filter(\.2).map(\.1)
            #expect(starts == starts.sorted())
            #expect(starts.count == 6)
        }
        // Different keys did run in parallel.
        var running = 0
        var maxRunning = 0
        for event in events { running += event.2 ? 1 : -1; maxRunning = max(maxRunning, running) }
        #expect(maxRunning == 2)
    }

    @Test func offsetIsCommittedOnlyAfterItsResultIsAcknowledged() async throws {
        let gate = Gate()
        var registry = WorkerRegistry()
        registry.register(type: "gated", worker: ClosureWorker { job in
            await gate.wait()
            return .newData
        })
        registry.register(type: "fast", worker: NoopWorker(outcome: .noData))
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.consumer["auto.commit.interval.ms"] = "200"
        }
        try await harness.produce(#"{"aps":{"content-available":1},"type":"fast"}"#)     // offset 0
        try await harness.produce(#"{"aps":{"content-available":1},"type":"gated"}"#)    // offset 1
        try await harness.produce(#"{"aps":{"content-available":1},"type":"fast"}"#)     // offset 2
        _ = try await harness.results(count: 2)  // offsets 0 and 2 are done; 1 is held
        try await Task.sleep(for: .milliseconds(800))  // several auto-commit intervals
        let held = try await harness.committedOffsets()
        #expect(held[0] == 1, "only offset 0 may be committed while offset 1 has no result")
        await gate.open()
        _ = try await harness.results(count: 3)
        try await harness.stop()
        let after = try await harness.committedOffsets()
        #expect(after[0] == 3)
        harness.cluster.shutdown()
    }

    @Test func gracefulShutdownFinishesRunningJobsAndLeavesTheRestToTheGroup() async throws {
        let started = Mutex<Set<Int64>>([])
        var registry = WorkerRegistry()
        registry.register(type: "work", worker: ClosureWorker { job in
            started.withLock { _ = $0.insert(job.source.offset) }
            try await Task.sleep(for: .milliseconds(400))
            return .newData
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) { $0.maxInFlight = 2 }
        for _ in 0..<6 { try await harness.produce(#"{"aps":{"content-available":1},"type":"work"}"#) }
        while started.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        // Two jobs are running and four wait for a slot: stop gracefully, start a new member of the group.
        let first = try await harness.restart(registry: registry)
        #expect(first.count == 2, "the running jobs finish and their results are delivered")
        #expect(first.compactMap(\.offset).sorted() == [0, 1], "records waiting for a slot were not started")
        #expect(Set(first.compactMap(\.result)) == ["newData"])
        // The restarted service reads the records that were never started (offsets 2...5), once.
        let rest = try await harness.results(count: 4)
        let committedWhileRunning = try await harness.committedOffsets()
        #expect(committedWhileRunning[0] ?? 0 >= 2, "the finished jobs' offsets were committed at shutdown")
        try await harness.shutdown()
        #expect(rest.compactMap(\.offset).sorted() == [2, 3, 4, 5])
    }
}

/// Results that the broker refuses are kept and produced again, and their offsets wait for them.
@Suite(.timeLimit(.minutes(2)))
struct ResultDeliveryTests {
    @Test func aStopWithUndeliverableResultsWaitsOneDrainForThemNotMore() async throws {
        let gate = Gate()
        var registry = WorkerRegistry()
        registry.register(type: "quick", worker: ClosureWorker { _ in .newData })
        registry.register(type: "gated", worker: ClosureWorker { _ in await gate.wait(); return .newData })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.drainTimeout = .milliseconds(10_000)
            $0.producer["message.timeout.ms"] = "60000"  // the results stay in librdkafka's queue
        }
        try await harness.produce(#"{"aps":{"content-available":1},"type":"quick"}"#)
        try await harness.produce(#"{"aps":{"content-available":1},"type":"gated"}"#)
        _ = try await harness.results(count: 1)
        // From now on every Produce request fails (REQUEST_TIMED_OUT, retriable): the gated job's result is stuck.
        harness.cluster.pushRequestErrors(apiKey: 0, count: 100_000, error: 7)
        await gate.open()
        try await Task.sleep(for: .milliseconds(500))
        let start = ContinuousClock.now
        try await harness.stopService()
        let elapsed = start.duration(to: .now)
        // One drain for the results (10 s) and the close; before, the revocation inside close waited a second
        // drain (≥ 20 s in all). The margin between is for a machine busy with the rest of the suite (a
        // 6 s drain took 11.2 s there, 7.0 s alone).
        #expect(elapsed >= .seconds(10), "it waited for the stuck result: \(elapsed)")
        #expect(elapsed < .seconds(17), "it waited more than one drain for results: \(elapsed)")
        let committed = try await harness.committedOffsets()
        #expect(committed[0] == 1, "the stuck result's offset is not committed")
        harness.cluster.shutdown()
    }

    /// A harness on one partition whose `gated` worker returns `newData` once the gate opens.
    static func gatedHarness(configure: (inout ServiceConfiguration) -> Void) async throws -> (Gate, PushWorkerTestHarness) {
        let gate = Gate()
        var registry = WorkerRegistry()
        registry.register(type: "gated", worker: ClosureWorker { _ in
            await gate.wait()
            return .newData
        })
        return (gate, try await PushWorkerTestHarness.start(registry: registry, partitions: 1, configure: configure))
    }

    @Test func undeliveredResultsAreRetriedNeverDropped() async throws {
        let (gate, harness) = try await Self.gatedHarness {
            // librdkafka gives up on a result after 500 ms; pushworker must produce it again.
            $0.producer["message.timeout.ms"] = "500"
            $0.producer["retry.backoff.ms"] = "50"
        }
        for _ in 0..<3 { try await harness.produce(#"{"aps":{"content-available":1},"type":"gated"}"#) }
        // Every Produce request fails (REQUEST_TIMED_OUT, retriable, 7) until the results have timed out in
        // librdkafka and pushworker has produced them again; then the broker takes them. (A fixed number of
        // errors could be used up by librdkafka's own retries on a slow machine before any result timed out.)
        harness.cluster.pushRequestErrors(apiKey: 0, count: 100_000, error: 7)
        await gate.open()
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while harness.service.currentStatistics.resultDeliveryRetries == 0 {
            guard ContinuousClock.now < deadline else {
                Issue.record("no result was produced again within 30 s of its first produce failing")
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        harness.cluster.clearRequestErrors(apiKey: 0)
        let results = try await harness.results(count: 3, timeout: .seconds(60))
        let retries = harness.service.currentStatistics.resultDeliveryRetries
        try await harness.stop()
        let committed = try await harness.committedOffsets()
        harness.cluster.shutdown()
        #expect(results.count == 3)
        #expect(Set(results.compactMap(\.offset)) == [0, 1, 2])
        #expect(retries > 0, "the results were refused at first and produced again")
        #expect(committed[0] == 3)
    }
}

extension ResultDeliveryTests {
    @Test func resultsWaitInTheBacklogWhileLibrdkafkasQueueIsFull() async throws {
        var registry = WorkerRegistry()
        registry.register(type: "fast", worker: NoopWorker(outcome: .newData))
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 2) {
            // librdkafka holds at most 2 results at a time: most produce calls hit _QUEUE_FULL.
            $0.producer["queue.buffering.max.messages"] = "2"
        }
        for index in 0..<60 {
            try await harness.produce(#"{"aps":{"content-available":1},"type":"fast"}"#, key: "k\(index % 3)")
        }
        let results = try await harness.results(count: 60, timeout: .seconds(60))
        try await harness.stop()
        let committed = try await harness.committedOffsets()
        harness.cluster.shutdown()
        #expect(Set(results.compactMap { r in r.partition.flatMap { p in r.offset.map { "\(p)/\($0)" } } }).count == 60)
        // Per partition, the committed offset is the number of its records (-1001: none committed, none read).
        #expect(committed.values.map { max(0, $0) }.reduce(0, +) == 60)
    }
}

extension ResultDeliveryTests {
    @Test func aBrokerOutageDelaysResultsButLosesNone() async throws {
        let (gate, harness) = try await Self.gatedHarness {
            // Reconnect within a second once the broker is back (librdkafka's backoff grows to 10 s by
            // default), so the group session (6 s in the harness) does not time out on a busy machine.
            $0.kafka["reconnect.backoff.max.ms"] = "1000"
        }
        for _ in 0..<5 { try await harness.produce(#"{"aps":{"content-available":1},"type":"gated"}"#) }
        while harness.service.currentStatistics.recordsConsumed < 5 { try await Task.sleep(for: .milliseconds(20)) }
        // The only broker goes down while the jobs finish: their results cannot be produced.
        // While no child process starts: one would hold a copy of the listener the mock closes and binds again.
        try SpawnGate.whileNoChildStarts { try harness.cluster.setBrokerDown(1) }
        await gate.open()
        try await Task.sleep(for: .seconds(2))
        #expect(harness.receivedResults.isEmpty, "no result can be acknowledged while the broker is down")
        try harness.cluster.setBrokerUp(1)
        let results = try await harness.results(count: 5, timeout: .seconds(60))
        try await harness.stop()
        let committed = try await harness.committedOffsets()
        harness.cluster.shutdown()
        #expect(Set(results.compactMap(\.offset)) == [0, 1, 2, 3, 4])
        #expect(committed[0] == 5)
    }
}

/// Two members of one group: partitions move between them while records flow; every record gets a result.
@Suite(.timeLimit(.minutes(2)))
struct RebalanceTests {
    @Test func recordsSurviveMembersJoiningAndLeaving() async throws {
        var registry = WorkerRegistry()
        registry.register(type: "work", worker: ClosureWorker { _ in
            try await Task.sleep(for: .milliseconds(5))
            return .newData
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 4)
        let second = Mutex<[ReceivedResult]>([])
        let other = PushWorkerService(configuration: harness.configuration, registry: registry) { record in
            second.withLock { $0.append(ReceivedResult(record: record)) }
        }
        var produced: Set<String> = []
        func produceBatch(_ count: Int) async throws {
            for _ in 0..<count {
                let at = try await harness.produce(#"{"aps":{"content-available":1},"type":"work"}"#)
                produced.insert("\(at.topicPartition.partition)/\(at.offset)")
            }
        }
        try await produceBatch(40)
        _ = try await harness.results(count: 10)
        // A second member joins: the group rebalances (cooperative-sticky) while records flow.
        let otherTask = Task { try await other.run() }
        try await produceBatch(60)
        while other.currentStatistics.assignedPartitions.isEmpty {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await produceBatch(40)
        // The first member leaves: its partitions move to the second one.
        try await harness.stopService()
        try await produceBatch(40)
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        func covered() -> Set<String> {
            let all = harness.receivedResults + second.withLock { $0 }
            return Set(all.compactMap { result in result.partition.flatMap { p in result.offset.map { "\(p)/\($0)" } } })
        }
        while !produced.isSubset(of: covered()) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        other.shutdown()
        try await otherTask.value
        try await harness.shutdown()
        #expect(produced.count == 180)
        #expect(produced.subtracting(covered()).isEmpty, "every record has a result after the rebalances")
        #expect(other.currentStatistics.rebalances >= 2)
        #expect(!second.withLock { $0 }.isEmpty, "the second member did part of the work")
    }
}
