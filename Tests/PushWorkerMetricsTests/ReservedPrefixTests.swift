import PushWorkerMetrics
import Testing

/// `MetricsRegistry(reservedPrefix:)`: the registry of workers' own metrics refuses the service's names.
@Suite struct ReservedPrefixTests {
    @Test func namesWithTheReservedPrefixAreRefusedOthersTaken() throws {
        let registry = MetricsRegistry(reservedPrefix: "pushworker_")
        #expect(registry.reservedPrefix == "pushworker_")
        let attempts: [@Sendable () throws -> Void] = [
            { _ = try registry.counter("pushworker_results_total", help: "x") },
            { _ = try registry.gauge("pushworker_jobs_in_flight", help: "x") },
            { _ = try registry.histogram("pushworker_worker_duration_seconds", help: "x") },
        ]
        for register in attempts {
            do {
                try register()
                Issue.record("a reserved name was taken")
            } catch let error as MetricsError {
                #expect(error.code == .reservedName)
                #expect(error.description.contains("reserved for the service's own metrics"))
            } catch {
                Issue.record("not a MetricsError: \(error)")
            }
        }
        _ = try registry.counter("pushworkers_own_total", help: "Not the prefix.")
        _ = try registry.counter("my_pushworker_total", help: "Not at the start.")
        // Without a prefix, any valid name.
        _ = try MetricsRegistry().counter("pushworker_results_total", help: "x")
    }
}
