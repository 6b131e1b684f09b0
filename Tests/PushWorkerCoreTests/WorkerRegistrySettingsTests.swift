import Foundation
import Testing
@testable import PushWorkerCore

struct TooFewRepeats: Error {}

/// A worker built from its settings section (`ConfigurableWorker`).
struct GreetingWorker: ConfigurableWorker {
    struct Settings: Decodable, Sendable {
        var greeting: String
        var repeats: Int?
    }

    let text: String

    init(settings: Settings) throws {
        guard (settings.repeats ?? 1) > 0 else { throw TooFewRepeats() }
        text = String(repeating: settings.greeting, count: settings.repeats ?? 1)
    }

    func perform(_ job: Job) async throws -> WorkerOutcome { .newData }
}

/// `WorkerRegistry`'s settings and metrics for Swift workers.
@Suite struct WorkerRegistrySettingsTests {
    @Test func aConfigurableWorkerIsBuiltFromItsSectionAndTheSectionIsNotedAsRead() throws {
        var registry = WorkerRegistry(workerSettings: try WorkerSettings(json5: #"{ greet: { greeting: "hi", repeats: 2 }, other: {} }"#))
        #expect(registry.settingsSectionsRead.isEmpty)
        try registry.register(GreetingWorker.self, type: "greet", budget: .seconds(3))
        #expect(registry.settingsSectionsRead == ["greet"])
        let registered = try #require(registry.route(type: "greet"))
        #expect((registered.worker as? GreetingWorker)?.text == "hihi")
        #expect(registered.budget == .seconds(3))
        #expect(registered.name == "greet")

        // Another type reading a named section.
        var second = WorkerRegistry(workerSettings: try WorkerSettings(json5: #"{ shared: { greeting: "yo" } }"#))
        try second.register(GreetingWorker.self, type: "a", section: "shared", name: "swift:a")
        #expect(second.settingsSectionsRead == ["shared"])
        #expect(second.route(type: "a")?.name == "swift:a")
    }

    @Test func aBadSectionOrARefusingInitIsThrownAndNothingIsRegistered() throws {
        var registry = WorkerRegistry(workerSettings: try WorkerSettings(json5: #"{ greet: { greting: "hi" } }"#))
        do {
            try registry.register(GreetingWorker.self, type: "greet")
            Issue.record("a misspelt key was taken")
        } catch let error as WorkerSettingsError {
            #expect(error.key == "workerSettings.greet.greting")
            #expect(error.message == "is not a setting of GreetingWorker.Settings; known: greeting, repeats")
        }
        #expect(registry.route(type: "greet") == nil)

        var refusing = WorkerRegistry(workerSettings: try WorkerSettings(json5: #"{ greet: { greeting: "hi", repeats: 0 } }"#))
        // The worker's own refusal names the section it came from.
        do {
            try refusing.register(GreetingWorker.self, type: "greet")
            Issue.record("a refusing init registered a worker")
        } catch let error as WorkerSettingsError {
            #expect(error.code == .refusedByWorker)
            #expect(error.key == "workerSettings.greet")
            #expect(error.description == "config key 'workerSettings.greet': GreetingWorker refused these settings: TooFewRepeats()")
        }
        #expect(refusing.route(type: "greet") == nil)
    }

    @Test func workerMetricsRefuseTheServicePrefixAndDuplicates() throws {
        let registry = WorkerRegistry()
        let purges = try registry.metrics.counter("cache_purges_total", help: "Cache purges, by result.", labels: ["result"])
        purges.increment(labels: ["ok"])
        #expect(registry.metrics.exposition().contains(#"cache_purges_total{result="ok"} 1"#))
        do {
            _ = try registry.metrics.gauge("pushworker_jobs_in_flight", help: "A clash with the service's own.")
            Issue.record("a pushworker_ name was taken")
        } catch {
            #expect(error.code == .reservedName)
            #expect(error.metric == "pushworker_jobs_in_flight")
        }
        #expect(throws: MetricsError.self) { try registry.metrics.histogram("cache_purges_total", help: "Twice.") }
        // Copies of the registry share the metrics.
        let copy = registry
        #expect(copy.metrics === registry.metrics)
    }
}
