import Foundation
import PushWorkerCore
import PushWorker
import PushWorkerTesting
import Testing

/// The Swift configuration's times are `Duration`s; the file's keys stay milliseconds. These tests pin the
/// conversions both ways and what happens to Swift values the file could not hold.
@Suite(.timeLimit(.minutes(1)))
struct ConfigurationDurationTests {
    static func load(_ text: String) throws -> ServiceConfiguration {
        try ServiceConfiguration.load(json5: Data(text.utf8), environment: [:])
    }

    @Test func fileMillisecondsBecomeExactDurations() throws {
        let configuration = try Self.load(#"""
            { defaultBudgetMs: 1, drainTimeoutMs: 0,
              workers: {
                a: { kind: "noop", budgetMs: 1, delayMs: 1 },
                b: { kind: "exec", command: ["/bin/sh"], budgetMs: 2147483647, terminationGraceMs: 1 },
                c: { kind: "http", url: "http://127.0.0.1:9/x", timeoutMs: 1 },
                d: { kind: "exec", command: ["/bin/sh"] },
                e: { kind: "noop" },
                f: { kind: "http", url: "http://127.0.0.1:9/x" },
              } }
            """#)
        #expect(configuration.defaultBudget == .milliseconds(1))
        #expect(configuration.drainTimeout == .zero)
        #expect(configuration.workers["a"]?.budget == .milliseconds(1))
        #expect(configuration.workers["a"]?.kind == .noop(result: .noData, reason: nil, delay: .milliseconds(1)))
        #expect(configuration.workers["b"]?.budget == .milliseconds(2_147_483_647))
        #expect(configuration.workers["b"]?.kind == .exec(arguments: ["/bin/sh"], environment: [:], workingDirectory: nil, terminationGrace: .milliseconds(1)))
        #expect(configuration.workers["c"]?.kind == .http(url: URL(string: "http://127.0.0.1:9/x")!, headers: [:], requestTimeout: .milliseconds(1)))  // invariant: a literal URL
        // The file's defaults, as Durations.
        #expect(configuration.workers["d"]?.budget == nil)
        #expect(configuration.workers["d"]?.kind == .exec(arguments: ["/bin/sh"], environment: [:], workingDirectory: nil, terminationGrace: .seconds(2)))
        #expect(configuration.workers["e"]?.kind == .noop(result: .noData, reason: nil, delay: .zero))
        #expect(configuration.workers["f"]?.kind == .http(url: URL(string: "http://127.0.0.1:9/x")!, headers: [:], requestTimeout: .seconds(30)))  // invariant: a literal URL
        let registry = configuration.makeRegistry()
        #expect(registry.route(type: "a")?.budget == .milliseconds(1))
        #expect(registry.route(type: "d")?.budget == .milliseconds(1), "the default budget")
        #expect(registry.route(type: "b")?.budget == .milliseconds(2_147_483_647))
        // check-config prints the file's numbers back.
        let text = configuration.effectiveDescription(registry: registry)
        #expect(text.contains(#""defaultBudgetMs" : 1,"#))
        #expect(text.contains(#""drainTimeoutMs" : 0,"#))
        #expect(text.contains(#""budgetMs" : 2147483647,"#))
        #expect(text.contains(#""terminationGraceMs" : 1"#) && text.contains(#""terminationGraceMs" : 2000"#))
        #expect(text.contains(#""delayMs" : 1"#) && text.contains(#""delayMs" : 0"#))
        #expect(text.contains(#""timeoutMs" : 1"#) && text.contains(#""timeoutMs" : 30000"#))
    }

    @Test func theDrainTimeoutIsComputedFromTheBudgetDurations() throws {
        var configuration = ServiceConfiguration()
        configuration.defaultBudget = .milliseconds(1500)
        configuration.workers["slow"] = WorkerSpec(kind: .noop(result: .newData, reason: nil, delay: .zero), budget: .microseconds(2_500_500))
        #expect(configuration.effectiveDrainTimeout == .microseconds(12_500_500), "2.5005 s + 10 s, the sub-millisecond part kept")
        var registry = configuration.makeRegistry()
        #expect(registry.route(type: "slow")?.budget == .microseconds(2_500_500))
        #expect(configuration.effectiveDrainTimeout(for: registry) == .microseconds(12_500_500))
        #expect(configuration.effectiveDescription(registry: registry).contains(#""drainTimeoutMs" : 12500,"#), "printed in whole milliseconds")
        #expect(configuration.effectiveDescription().contains(#""budgetMs" : 2500,"#))
        registry.register(type: "swift", worker: ClosureWorker { _ in .newData }, budget: .seconds(20) + .microseconds(1))
        #expect(configuration.effectiveDrainTimeout(for: registry) == .seconds(30) + .microseconds(1), "a Swift worker's budget counts")
        #expect(configuration.effectiveDrainTimeout == .microseconds(12_500_500), "configured workers only")

        configuration.drainTimeout = .microseconds(1500)
        #expect(configuration.effectiveDrainTimeout(for: registry) == .microseconds(1500), "an explicit drain timeout wins")
        #expect(configuration.effectiveDescription(registry: registry).contains(#""drainTimeoutMs" : 1,"#))
    }

    @Test func swiftDurationsOutsideTheFileRangeAreClamped() throws {
        var configuration = ServiceConfiguration()
        configuration.defaultBudget = .zero
        configuration.workers["negative"] = WorkerSpec(kind: .noop(result: .newData, reason: nil, delay: .seconds(-1)), budget: .seconds(-5))
        configuration.workers["tiny"] = WorkerSpec(kind: .http(url: URL(string: "http://127.0.0.1:9/x")!, headers: [:], requestTimeout: .zero), budget: .microseconds(500))  // invariant: a literal URL
        configuration.workers["huge"] = WorkerSpec(kind: .exec(arguments: ["/bin/sh"], environment: [:], workingDirectory: nil, terminationGrace: .seconds(Int64.max)), budget: .seconds(1e20))
        let registry = configuration.makeRegistry()
        #expect(registry.defaultBudget == .milliseconds(1), "zero counts as 1 ms, the file's minimum")
        #expect(registry.route(type: "negative")?.budget == .milliseconds(1))
        #expect(registry.route(type: "tiny")?.budget == .milliseconds(1))
        #expect(registry.route(type: "huge")?.budget == .milliseconds(Int32.max), "the file's maximum, about 24.8 days")
        #expect(configuration.effectiveDrainTimeout == .milliseconds(Int32.max) + .seconds(10))
        let text = configuration.effectiveDescription()
        #expect(text.contains(#""defaultBudgetMs" : 1,"#))
        #expect(text.contains(#""budgetMs" : 2147483647,"#))
        #expect(text.contains(#""terminationGraceMs" : 2147483647"#))
        #expect(text.contains(#""delayMs" : 0"#) && text.contains(#""timeoutMs" : 1"#))
        #expect(text.contains(#""drainTimeoutMs" : 2147493647,"#))

        configuration.drainTimeout = .seconds(-1)
        #expect(configuration.effectiveDrainTimeout == .zero)
        configuration.drainTimeout = .seconds(Int64.max)
        #expect(configuration.effectiveDrainTimeout(for: registry) == .milliseconds(Int32.max))

        // A Swift worker of any budget: the registry clamps it to the file's maximum (RegisteredWorker.maxBudget),
        // the drain counts it, and check-config prints the clamped value; a huge health threshold is printed
        // saturated at Int64's milliseconds instead of trapping.
        var swift = ServiceConfiguration()
        var big = swift.makeRegistry()
        big.register(type: "forever", worker: ClosureWorker { _ in .newData }, budget: .seconds(1e20))
        #expect(swift.effectiveDrainTimeout(for: big) == .milliseconds(Int32.max) + .seconds(10))
        swift.health.stuckResultsAfter = .seconds(Int64.max)
        let printed = swift.effectiveDescription(registry: big)
        #expect(printed.contains(#""budgetMs" : 2147483647"#), "\(printed)")
        #expect(printed.contains(#""stuckResultsAfterMs" : 9223372036854775807"#))
    }

    @Test func aHugeNoopDelayWaitsForTheBudgetInsteadOfTrapping() async throws {
        // Task.sleep(for: .seconds(Int64.max)) traps (the deadline overflows); the delay is clamped first.
        var configuration = ServiceConfiguration()
        configuration.workers["sleepy"] = WorkerSpec(kind: .noop(result: .newData, reason: nil, delay: .seconds(Int64.max)))
        let worker = try #require(configuration.makeRegistry().route(type: "sleepy")).worker
        let report = await WorkerProbe.run(worker, payload: #"{"aps":{"content-available":1},"type":"sleepy"}"#, budget: .milliseconds(200))
        #expect(report.timedOut)
        #expect(report.outcome.result == .failed && report.outcome.reason == .timeout)
    }
}
