import Foundation
@testable import PushWorkerCLI
import PushWorkerCore
import PushWorkerKafka
import PushWorker
import Synchronization
import Testing

/// `PushWorkerCommandLine.runService(_:alongside:)`: the service beside the application's own services
/// under one signal handler, on an embedded cluster; the signals come from the test.
@Suite(.timeLimit(.minutes(2)))
struct RunServiceAlongsideTests {
    /// The signal actions handed to the watcher, for the test to fire.
    final class FakeSignals: Sendable {
        private let actions = Mutex<(first: (@Sendable () -> Void)?, second: (@Sendable () -> Void)?)>((nil, nil))
        func watch(_ first: @escaping @Sendable () -> Void, _ second: @escaping @Sendable () -> Void) -> AnyObject {
            actions.withLock { $0 = (first, second) }
            return self
        }
        func first() { actions.withLock { $0.first }?() }
        func second() { actions.withLock { $0.second }?() }
    }

    /// Shared mutable test state.
    final class Box<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func update(_ change: @Sendable (inout Value) -> Void) { value.withLock { change(&$0) } }
        var current: Value { value.withLock { $0 } }
    }

    struct CompanionFailure: Error {}

    /// A cluster with one input partition, a service whose `long` worker sleeps 60 s (its budget) and whose
    /// `quick` worker answers at once, and a producer of pushes.
    struct Setup {
        let cluster: EmbeddedKafkaCluster
        let service: PushWorkerService
        let producer: KafkaProducer
        let topic: String
        let results: Box<[String]>
        let longStarted: Box<Int>
        let secondStarted: Box<Int>

        init() throws {
            cluster = try EmbeddedKafkaCluster(brokers: 1)
            let suffix = UUID().uuidString.prefix(8).lowercased()
            var configuration = ServiceConfiguration()
            configuration.kafka = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
            configuration.consumer["fetch.wait.max.ms"] = "20"
            configuration.consumer["session.timeout.ms"] = "6000"
            configuration.consumer["heartbeat.interval.ms"] = "500"
            topic = "pushes-\(suffix)"
            configuration.inputTopics = [topic]
            configuration.resultsTopic = "push-results-\(suffix)"
            configuration.groupId = "pushworker-alongside-\(suffix)"
            configuration.httpServer.enabled = false
            try cluster.createTopic(topic, partitions: 1)
            try cluster.createTopic(configuration.resultsTopic, partitions: 1)
            let results = Box<[String]>([])
            let longStarted = Box(0)
            let secondStarted = Box(0)
            self.secondStarted = secondStarted
            self.results = results
            self.longStarted = longStarted
            var registry = WorkerRegistry()
            registry.register(type: "quick", worker: ClosureWorker { _ in .newData })
            registry.register(type: "long", worker: ClosureWorker { _ in
                longStarted.update { $0 += 1 }
                try await Task.sleep(for: .seconds(60))
                return .newData
            }, budget: .seconds(60))
            registry.register(type: "second", worker: ClosureWorker { _ in
                secondStarted.update { $0 += 1 }
                try await Task.sleep(for: .seconds(1))
                return .noData
            })
            service = PushWorkerService(configuration: configuration, registry: registry) { record in
                let text = String(decoding: record.value ?? [], as: UTF8.self)
                results.update { $0.append(text) }
            }
            producer = try KafkaProducer(configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]))
        }

        func produce(_ type: String) async throws {
            let report = try await producer.send(KafkaOutgoingRecord(topic: topic, value: Array(#"{"aps":{"content-available":1},"type":"\#(type)"}"#.utf8)))
            if let error = report.error { throw error }
        }

        func stop() async {
            await producer.close()
            let cluster = self.cluster
            _ = try? await DedicatedThread.run(name: "test-cluster-stop") { cluster.shutdown() }
        }
    }

    struct ClosureWorker: Worker {
        let body: @Sendable (Job) async throws -> WorkerOutcome
        init(_ body: @escaping @Sendable (Job) async throws -> WorkerOutcome) { self.body = body }
        func perform(_ job: Job) async throws -> WorkerOutcome { try await body(job) }
    }

    /// Waits until `condition` holds, at most `timeout`.
    static func waitFor(timeout: Duration = .seconds(30), _ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            if ContinuousClock.now >= deadline { throw CommandLineError(.failure, "timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// A companion that runs until cancelled and records that it was.
    static func untilCancelled(_ started: Box<Bool>, _ cancelled: Box<Bool>) -> @Sendable () async throws -> Void {
        {
            started.update { $0 = true }
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
            cancelled.update { $0 = true }
            throw CancellationError()
        }
    }

    @Test func theFirstSignalStopsTheServiceGracefullyAndCancelsTheCompanions() async throws {
        let setup = try Setup()
        let signals = FakeSignals()
        let (started, cancelled) = (Box(false), Box(false))
        // How many results had been delivered when the companion saw its cancellation.
        let resultsAtCancellation = Box<Int?>(nil)
        let results = setup.results
        let run = Task {
            try await PushWorkerCommandLine.runService(setup.service, alongside: [{
                try await Self.untilCancelled(started, cancelled)()
            }, {
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                resultsAtCancellation.update { $0 = results.current.count }
            }], watch: signals.watch)
        }
        try await setup.produce("quick")
        try await Self.waitFor("the first result") { setup.results.current.count == 1 }
        try await setup.produce("second")
        try await Self.waitFor("the companion") { started.current }
        // The 1 s job is running: a graceful stop lets it finish and delivers its result.
        try await Self.waitFor("the 1 s job") { setup.secondStarted.current == 1 }
        signals.first()
        try await run.value
        #expect(cancelled.current, "the companion's task was cancelled")
        #expect(resultsAtCancellation.current == 1, "the companions were cancelled at the signal, before the running job finished")
        #expect(setup.results.current.count == 2, "the running job finished and its result was delivered")
        #expect(setup.results.current.last?.contains(#""result":"noData""#) == true)
        await setup.stop()
    }

    @Test func theSecondSignalStopsTheServiceFast() async throws {
        let setup = try Setup()
        let signals = FakeSignals()
        let (started, cancelled) = (Box(false), Box(false))
        let run = Task {
            try await PushWorkerCommandLine.runService(setup.service, alongside: [Self.untilCancelled(started, cancelled)], watch: signals.watch)
        }
        try await setup.produce("long")
        try await Self.waitFor("the long job") { setup.longStarted.current == 1 }
        let start = ContinuousClock.now
        signals.first()
        // The graceful stop would wait for the 60 s job; the second signal cuts it short.
        try await Self.waitFor("the companion's cancellation") { cancelled.current }
        signals.second()
        try await run.value
        // Fast against the 60 s the graceful stop would wait; the margin is for a machine busy with the
        // rest of the suite (10.4 s seen there, 0.2 s alone).
        #expect(start.duration(to: .now) < .seconds(30), "stopped fast: \(start.duration(to: .now))")
        #expect(setup.results.current.isEmpty, "no result for the job cut short: \(setup.results.current)")
        await setup.stop()
    }

    @Test func aCompanionThatThrowsStopsTheServiceAndItsErrorIsRethrown() async throws {
        let setup = try Setup()
        let fail = Box(false)
        let (started, cancelled) = (Box(false), Box(false))
        let run = Task {
            try await PushWorkerCommandLine.runService(setup.service, alongside: [
                Self.untilCancelled(started, cancelled),
                {
                    while !fail.current { try await Task.sleep(for: .milliseconds(10)) }
                    throw CompanionFailure()
                },
            ], watch: FakeSignals().watch)
        }
        try await setup.produce("quick")
        try await Self.waitFor("the first result") { setup.results.current.count == 1 }
        fail.update { $0 = true }
        await #expect(throws: CompanionFailure.self) { try await run.value }
        #expect(cancelled.current, "the other companion was cancelled")
        #expect(setup.service.httpServerPort == nil)
        await setup.stop()
    }

    @Test func aCompanionThatReturnsEarlyStopsTheService() async throws {
        let setup = try Setup()
        let finish = Box(false)
        let run = Task {
            try await PushWorkerCommandLine.runService(setup.service, alongside: [{
                while !finish.current { try await Task.sleep(for: .milliseconds(10)) }
            }], watch: FakeSignals().watch)
        }
        try await setup.produce("quick")
        try await Self.waitFor("the first result") { setup.results.current.count == 1 }
        finish.update { $0 = true }
        let error = await #expect(throws: CommandLineError.self) { try await run.value }
        #expect(error?.message.contains("companion 0 returned before a stop") == true, "\(String(describing: error))")
        await setup.stop()
    }

    @Test func cancellingTheCallerStopsEverythingFast() async throws {
        let setup = try Setup()
        let (started, cancelled) = (Box(false), Box(false))
        let run = Task {
            try await PushWorkerCommandLine.runService(setup.service, alongside: [Self.untilCancelled(started, cancelled)], watch: FakeSignals().watch)
        }
        try await setup.produce("long")
        try await Self.waitFor("the long job") { setup.longStarted.current == 1 }
        let start = ContinuousClock.now
        run.cancel()
        try await run.value
        // Fast against the long job's 60 s (see theSecondSignalStopsTheServiceFast).
        #expect(start.duration(to: .now) < .seconds(30), "stopped fast: \(start.duration(to: .now))")
        #expect(cancelled.current)
        #expect(setup.results.current.isEmpty)
        await setup.stop()
    }
}
