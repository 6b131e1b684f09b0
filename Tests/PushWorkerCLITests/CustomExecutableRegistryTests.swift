import Foundation
@testable import PushWorkerCLI
import PushWorkerCore
@testable import PushWorkerService
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
}
