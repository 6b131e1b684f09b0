import CachePurgeWorker
import PushWorkerAPI
import PushWorkerProbe
import Testing

/// The worker called directly with `WorkerProbe`: a hand-built job under a short budget, no Kafka.
@Suite struct CachePurgeWorkerTests {
    static func push(_ keys: String) -> String {
        #"{"aps":{"content-available":1},"type":"cache-purge","keys":\#(keys)}"#
    }

    @Test func purgesHeldKeysAsNewData() async {
        let store = CacheStore(["a": [1], "b": [2], "c": [3]])
        let report = await WorkerProbe.run(CachePurgeWorker(store: store), payload: Self.push(#"["a","c","x"]"#), budget: .seconds(5))
        #expect(report.outcome == .newData)
        #expect(!report.timedOut)
        #expect(store.keys == ["b"])
    }

    @Test func nothingHeldIsNoDataWithItsReason() async {
        let store = CacheStore(["a": [1]])
        let report = await WorkerProbe.run(CachePurgeWorker(store: store), payload: Self.push(#"["x"]"#), budget: .seconds(5))
        #expect(report.outcome == WorkerOutcome(.noData, reason: "nothingToPurge"))
        #expect(store.keys == ["a"])
    }

    @Test func badPayloadsFailWithoutTouchingTheCache() async {
        let store = CacheStore(["a": [1]])
        let missing = await WorkerProbe.run(CachePurgeWorker(store: store), payload: #"{"aps":{"content-available":1}}"#, budget: .seconds(5))
        #expect(missing.outcome.result == .failed)
        #expect(missing.outcome.reason == .invalidPayload)
        let many = "[" + (0...CachePurgeWorker.maxKeys).map { "\"k\($0)\"" }.joined(separator: ",") + ",\"a\"]"
        let tooMany = await WorkerProbe.run(CachePurgeWorker(store: store), payload: Self.push(many), budget: .seconds(5))
        #expect(tooMany.outcome.reason == "tooManyKeys")
        #expect(store.keys == ["a"])
    }

    @Test func builtFromItsSettingsSectionAsTheServiceWould() async throws {
        let worker = try WorkerProbe.makeWorker(CachePurgeWorker.self, settings: "{ maxKeys: 2 }", section: "cache-purge")
        #expect(worker.maxKeysPerPush == 2)
        let tooMany = await WorkerProbe.run(worker, payload: Self.push(#"["a","b","c"]"#), budget: .seconds(5))
        #expect(tooMany.outcome.reason == "tooManyKeys")
        #expect(try WorkerProbe.makeWorker(CachePurgeWorker.self).maxKeysPerPush == CachePurgeWorker.maxKeys)

        // A misspelt key is refused with its path, as `run` would refuse the config file.
        do {
            _ = try WorkerProbe.makeWorker(CachePurgeWorker.self, settings: "{ maxkeys: 2 }", section: "cache-purge")
            Issue.record("a misspelt key was taken")
        } catch let error as WorkerSettingsError {
            #expect(error.key == "workerSettings.cache-purge.maxkeys")
            #expect(error.message == "is not a setting of CachePurgeWorker.Settings; known: maxKeys")
        }
        #expect(throws: CachePurgeWorker.SettingsError.self) { try WorkerProbe.makeWorker(CachePurgeWorker.self, settings: "{ maxKeys: 0 }") }
    }
}
