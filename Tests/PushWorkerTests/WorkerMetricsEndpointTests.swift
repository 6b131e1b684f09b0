import Foundation
import PushWorkerCore
import PushWorker
import PushWorkerTesting
import Testing

/// A Swift worker's own metrics (`WorkerRegistry.metrics`) on the running service's `/metrics`, beside the
/// service's series, on an embedded cluster.
@Suite(.timeLimit(.minutes(3)))
struct WorkerMetricsEndpointTests {
    @Test func aWorkersCounterAndHistogramAppearOnMetricsWithTheServicesOwn() async throws {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        let purges = try registry.metrics.counter("cache_purges_total", help: "Cache purges, by result.", labels: ["result"])
        let sizes = try registry.metrics.histogram("cache_purge_items", help: "Items per purge.", buckets: [1, 10, 100])
        registry.register(type: "purge", worker: ClosureWorker { job in
            let items = job.object["items"]?.intValue ?? 0
            purges.increment(labels: [items > 0 ? "purged" : "empty"])
            sizes.observe(Double(items))
            return items > 0 ? .newData : .noData
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
        }
        let port = try await HTTPProbe.port(of: harness.service)
        for items in [3, 0, 50] {
            try await harness.produce(#"{"aps":{"content-available":1},"type":"purge","items":\#(items)}"#)
        }
        let results = try await harness.results(count: 3)
        #expect(results.compactMap(\.result).sorted() == ["newData", "newData", "noData"])

        // Counted when each job ran; the service counts each result once the broker acknowledged it.
        var metrics = Exposition("")
        let counted = try await HTTPProbe.eventually(timeout: .seconds(20)) {
            metrics = Exposition(try await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").body)
            return metrics.total("pushworker_results_total") == 3
        }
        #expect(counted, "\(metrics.text)")
        #expect(metrics[#"cache_purges_total{result="purged"}"#] == 2, "\(metrics.text)")
        #expect(metrics[#"cache_purges_total{result="empty"}"#] == 1)
        #expect(metrics["cache_purge_items_count"] == 3)
        #expect(metrics["cache_purge_items_sum"] == 53)
        #expect(metrics[#"cache_purge_items_bucket{le="10"}"#] == 2)
        #expect(metrics.text.contains("# HELP cache_purges_total Cache purges, by result.\n# TYPE cache_purges_total counter\n"))
        #expect(metrics[#"pushworker_results_total{type="purge",result="newData",reason=""}"#] == 2)
        #expect(metrics["pushworker_records_consumed_total"] == 3)
        // The service's series first, then the workers'.
        let serviceAt = try #require(metrics.text.range(of: "# HELP pushworker_build_info"))
        let workerAt = try #require(metrics.text.range(of: "# HELP cache_purges_total"))
        #expect(serviceAt.lowerBound < workerAt.lowerBound)
        try await harness.stop()
    }
}
