import Foundation
import PushWorkerCore
@testable import PushWorker
import Testing

/// A settings type read from the `workerSettings` section of the tests.
struct CacheSettings: Decodable, Sendable {
    var cacheURL: URL
    var apiToken: String?
}

/// The config file's `workerSettings`: sections loaded as they are, each read by a Swift worker; a section
/// no worker reads is refused at startup.
@Suite struct WorkerSettingsConfigurationTests {
    static func load(_ text: String) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: [:])
    }

    static func error(_ body: () throws -> Void) -> ConfigurationError? {
        do {
            try body()
            return nil
        } catch let error as ConfigurationError {
            return error
        } catch {
            Issue.record("not a ConfigurationError: \(error)")
            return nil
        }
    }

    static let file = """
        // JSON5, as the rest of the file
        {
          workers: { ping: { kind: "noop" } },
          workerSettings: {
            "cache-purge": { cacheURL: "http://cache:8080/purge", apiToken: "s3cret", },
          },
        }
        """

    @Test func sectionsAreLoadedAndReadByTheRegistry() throws {
        let configuration = try Self.load(Self.file)
        #expect(configuration.workerSettings.sectionNames == ["cache-purge"])
        var registry = configuration.makeRegistry()
        #expect(registry.workerSettings == configuration.workerSettings)
        let settings = try registry.settings(CacheSettings.self, section: "cache-purge")
        #expect(settings.cacheURL.absoluteString == "http://cache:8080/purge")
        #expect(settings.apiToken == "s3cret")
        try configuration.checkRoutes(registry)
        // Without workerSettings: none, and nothing to read.
        let plain = try Self.load("{}")
        #expect(plain.workerSettings == WorkerSettings())
        try plain.checkRoutes(plain.makeRegistry())
    }

    /// A program that builds the service itself gets the same refusals as `pushworker run`, from `run()`,
    /// before it connects (the bootstrap server here does not exist, so only the check can end it at once).
    @Test(.timeLimit(.minutes(1))) func runRefusesAnUnreadSectionAndAStrayRouteBeforeConnecting() async throws {
        var configuration = try Self.load(Self.file)
        configuration.kafka["bootstrap.servers"] = "127.0.0.1:1"
        configuration.httpServer.enabled = false
        let unread = PushWorkerService(configuration: configuration)
        await #expect(throws: ConfigurationError.self) { try await unread.run() }

        var permitted = try Self.load("{ permittedTypes: [\"ping\"] }")
        permitted.kafka["bootstrap.servers"] = "127.0.0.1:1"
        permitted.httpServer.enabled = false
        var registry = permitted.makeRegistry()
        registry.register(type: "pong", worker: NoopWorker())
        let stray = PushWorkerService(configuration: permitted, registry: registry)
        do {
            try await stray.run()
            Issue.record("run() started with a route that is not permitted")
        } catch let error as ConfigurationError {
            #expect(error.key == "permittedTypes")
        }
    }

    @Test func aSectionNoWorkerReadsIsRefusedWithItsPath() throws {
        let configuration = try Self.load(Self.file)
        let unread = try #require(Self.error { try configuration.checkRoutes(configuration.makeRegistry()) })
        #expect(unread.code == .unknownKey)
        #expect(unread.key == "workerSettings.cache-purge")
        #expect(unread.message.contains("no registered worker reads this settings section (sections read: none)"))

        // Read another section only: the file's section is still unread.
        var registry = configuration.makeRegistry()
        _ = try? registry.settings(CacheSettings.self, section: "cache-purj")
        let other = try #require(Self.error { try configuration.checkRoutes(registry) })
        #expect(other.key == "workerSettings.cache-purge")
        #expect(other.message.contains("(sections read: cache-purj)"))
    }

    @Test func workerSettingsAndItsSectionsMustBeObjects() throws {
        let notObject = try #require(Self.error { _ = try Self.load(#"{ workerSettings: ["cache-purge"] }"#) })
        #expect(notObject.key == "workerSettings")
        #expect(notObject.code == .invalidValue)
        let section = try #require(Self.error { _ = try Self.load(#"{ workerSettings: { "cache-purge": "http://cache" } }"#) })
        #expect(section.key == "workerSettings.cache-purge")
        #expect(section.message == "must be an object (the settings of a worker), got a string")
        // A misspelt top-level key is still unknown.
        let misspelt = try #require(Self.error { _ = try Self.load(#"{ workerSetings: {} }"#) })
        #expect(misspelt.key == "workerSetings")
        #expect(misspelt.code == .unknownKey)
    }

    @Test func theEffectiveConfigurationShowsTheSectionsWithSecretsMasked() throws {
        let configuration = try Self.load(Self.file)
        let text = configuration.effectiveDescription()
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(json["workerSettings"] == .object(["cache-purge": .object([
            "cacheURL": .string("http://cache:8080/purge"), "apiToken": .string("*****"),
        ])]))
        #expect(!text.contains("s3cret"))
        #expect(try Self.load("{}").effectiveDescription().contains(#""workerSettings" : {"#))
    }
}
