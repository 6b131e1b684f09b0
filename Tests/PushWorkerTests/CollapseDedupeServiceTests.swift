import Foundation
import PushWorker
import PushWorkerCore
import PushWorkerKafka
import PushWorkerTesting
import Testing

/// `apns-collapse-id` and the `apns-id` dedupe window through the real service on the embedded cluster:
/// collapsed and duplicate records get their results on the results topic, and the group's committed
/// offset moves past them.
@Suite(.timeLimit(.minutes(2)))
struct CollapseDedupeServiceTests {
    static func payload(_ type: String) -> String { #"{"aps":{"content-available":1},"type":"\#(type)"}"# }

    @Test func collapsedAndDuplicateRecordsGetTheirResultsAndAreCommitted() async throws {
        let gate = Gate()
        var registry = WorkerRegistry()
        registry.register(type: "held", worker: ClosureWorker { _ in await gate.wait(); return .newData })
        registry.register(type: "work", worker: ClosureWorker { _ in .newData })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.dedupe = DedupeConfiguration(window: .seconds(60))
        }
        // 0 runs (held) for device dev-1; 1, 2 and 3 wait behind it with the same collapse id: 3 is the newest.
        try await harness.produce(Self.payload("held"), key: "dev-1", headers: ["apns-id": "n-0"])
        for offset in 1...3 {
            try await harness.produce(Self.payload("work"), key: "dev-1", headers: ["apns-id": "n-\(offset)", "apns-collapse-id": "badge"])
        }
        // 4 runs for dev-2; 5 repeats its apns-id for dev-3.
        try await harness.produce(Self.payload("work"), key: "dev-2", headers: ["apns-id": "n-4"])
        try await harness.produce(Self.payload("work"), key: "dev-3", headers: ["apns-id": "n-4"])

        // While 0 still runs: 1 and 2 are collapsed, 5 is a duplicate, 4 ran; nothing past 0 is committed.
        let early = try await harness.results(count: 4)
        #expect(Dictionary(uniqueKeysWithValues: early.map { ($0.offset ?? -1, $0.reason ?? "") }) == [1: "collapsed", 2: "collapsed", 4: "", 5: "duplicate"])
        #expect(try await harness.committedOffsets()[0].map { $0 <= 0 } ?? true, "nothing is committed past the running offset 0")
        await gate.open()

        let all = try await harness.results(count: 6)
        let byOffset = Dictionary(uniqueKeysWithValues: all.map { ($0.offset ?? -1, $0) })
        #expect(byOffset.count == 6, "one result per record: \(all.map(\.json))")
        #expect(byOffset[0]?.result == "newData" && byOffset[3]?.result == "newData" && byOffset[4]?.result == "newData")
        #expect(byOffset[1]?.detail?.contains("offset 2") == true && byOffset[2]?.detail?.contains("offset 3") == true)
        #expect(byOffset[5]?.detail?.contains("repeats the record at \(harness.configuration.inputTopics[0])/0 offset 4") == true, "\(byOffset[5]?.detail ?? "nil")")
        #expect(byOffset[5]?.messageId == "n-4" && byOffset[5]?.headers["apns-id"] == "n-4")
        #expect(byOffset[1]?.json["worker"] == .null && byOffset[1]?.json["startedAt"] == .null)

        // The results topic itself holds them, keyed by the input's key.
        let onTopic = try await harness.readResultsTopic(count: 6)
        let reasons = onTopic.compactMap { record -> String? in
            guard let value = record.value, let json = try? JSONDecoder().decode([String: JSONValue].self, from: Data(value)) else { return nil }
            return "\(record.key.map { String(decoding: $0, as: UTF8.self) } ?? "-"):\(json["result"]?.stringValue ?? "?")/\(json["reason"]?.stringValue ?? "")"
        }
        #expect(reasons.sorted() == ["dev-1:newData/", "dev-1:newData/", "dev-1:noData/collapsed", "dev-1:noData/collapsed", "dev-2:newData/", "dev-3:noData/duplicate"])

        // Every offset is done: the group commits past all six.
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        var committed = try await harness.committedOffsets()
        while committed[0] != 6 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            committed = try await harness.committedOffsets()
        }
        #expect(committed[0] == 6, "committed past the collapsed and duplicate records: \(committed)")
        try await harness.stop()
    }
}
