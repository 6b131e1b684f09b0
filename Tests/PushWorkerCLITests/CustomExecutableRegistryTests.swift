import Foundation
@testable import PushWorkerCLI
import PushWorkerCore
@testable import PushWorker
import Testing

/// The registry a custom executable's `PushWorkerCommandLine(registerWorkers:)` builds: the configured
/// workers plus the Swift ones, checked against `permittedTypes` at startup.
@Suite struct CustomExecutableRegistryTests {
    static func load(_ text: String, environment: [String: String] = [:]) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: environment)
    }

    @Test func customExecutablesAddSwiftWorkersBesideConfiguredOnes() throws {
        let configuration = try Self.load(#"{ workers: { ping: { kind: "noop" }, "content-update": { kind: "noop" } } }"#)
        let commandLine = PushWorkerCommandLine { registry, _ in
            registry.register(type: "content-update", worker: NoopWorker(outcome: .newData), name: "swift:content-update")
        }
        let registry = try commandLine.makeRegistry(configuration)
        #expect(registry.route(type: "ping")?.name == "noop:ping")
        #expect(registry.route(type: "content-update")?.name == "swift:content-update")
    }

    @Test func routesAreCheckedAgainstPermittedTypesAtStartup() throws {
        let swiftWorker = PushWorkerCommandLine { registry, _ in
            registry.register(type: "content-update", worker: NoopWorker(outcome: .newData))
        }
        // Every route is permitted and every permitted type has a worker (one configured, one Swift).
        let good = try Self.load(#"{ permittedTypes: ["ping", "content-update"], workers: { ping: { kind: "noop" } } }"#)
        #expect(try swiftWorker.makeRegistry(good).types == ["content-update", "ping"])
        // A worker for a type that is not permitted.
        let stray = try Self.load(#"{ permittedTypes: ["content-update"], workers: { ping: { kind: "noop" } } }"#)
        #expect(throws: ConfigurationError.self) { try swiftWorker.makeRegistry(stray) }
        do { _ = try swiftWorker.makeRegistry(stray) } catch let error as ConfigurationError {
            #expect(error.key == "permittedTypes")
            #expect(error.message.contains("'ping'"))
        }
        // A permitted type nobody handles.
        let missing = try Self.load(#"{ permittedTypes: ["ping", "content-update", "refresh"], workers: { ping: { kind: "noop" } } }"#)
        do {
            _ = try swiftWorker.makeRegistry(missing)
            Issue.record("a permitted type without a worker was accepted")
        } catch let error as ConfigurationError {
            #expect(error.message.contains("'refresh'"))
        }
        // Without permittedTypes, any registered worker is accepted.
        #expect(try swiftWorker.makeRegistry(try Self.load(#"{ workers: { ping: { kind: "noop" } } }"#)).types.count == 2)
    }

    /// The settings section of a Swift worker, read in `registerWorkers`.
    struct PurgeSettings: Decodable, Sendable { var cacheURL: URL }

    @Test func swiftWorkersReadTheirSettingsSectionsAndUnreadSectionsAreRefused() throws {
        let reads = PushWorkerCommandLine { registry, _ in
            let settings = try registry.settings(PurgeSettings.self, section: "cache-purge")
            let purges = try registry.metrics.counter("cache_purges_total", help: "Cache purges.")
            purges.increment(by: 0)
            registry.register(type: "cache-purge", worker: NoopWorker(outcome: settings.cacheURL.host == "cache" ? .newData : .noData))
        }
        let good = try Self.load(#"{ workerSettings: { "cache-purge": { cacheURL: "http://cache:8080" } } }"#)
        let registry = try reads.makeRegistry(good)
        #expect(registry.settingsSectionsRead == ["cache-purge"])
        #expect(registry.types == ["cache-purge"])
        #expect(registry.metrics.exposition().contains("cache_purges_total 0"))

        // A misspelt key: an invalid configuration naming the key, as for the rest of the file.
        let misspelt = try Self.load(#"{ workerSettings: { "cache-purge": { cacheUrl: "http://cache:8080" } } }"#)
        do {
            _ = try reads.makeRegistry(misspelt)
            Issue.record("a misspelt setting was accepted")
        } catch let error as ConfigurationError {
            #expect(error.code == .unknownKey)
            #expect(error.description == "config key 'workerSettings.cache-purge.cacheUrl': is not a setting of CustomExecutableRegistryTests.PurgeSettings; known: cacheURL")
        }

        // A section that no worker reads (the stock executable reads none).
        let stray = try Self.load(#"{ workerSettings: { "cache-purge": { cacheURL: "http://cache:8080" }, "old-worker": {} } }"#)
        do {
            _ = try reads.makeRegistry(stray)
            Issue.record("an unread section was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == "workerSettings.old-worker")
            #expect(error.message.contains("(sections read: cache-purge)"))
        }
        do {
            _ = try PushWorkerCommandLine().makeRegistry(good)
            Issue.record("a section was accepted without a worker reading it")
        } catch let error as ConfigurationError {
            #expect(error.key == "workerSettings.cache-purge")
        }
    }
}
