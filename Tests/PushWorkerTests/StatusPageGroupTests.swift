import Foundation
import PushWorkerCore
import PushWorkerKafka
@testable import PushWorker
import PushWorkerTesting
import Synchronization
import Testing

/// The status page of a consumer group: two services on one embedded cluster each show both members in
/// `/status.json`, a stopped member drops off the other's within the member timeout, failed results
/// show without their payload, `statusPage.enabled: false` turns the page and the publishing off, and the
/// group balance flags: none for two members on two partitions, surplus and idle for two on one.
@Suite(.timeLimit(.minutes(2)))
struct StatusPageGroupTests {
    /// Whether the suite runs under a sanitizer (`PUSHWORKER_SANITIZER`, set by .ci/run): longer intervals.
    static var underSanitizer: Bool { !(ProcessInfo.processInfo.environment["PUSHWORKER_SANITIZER"] ?? "").isEmpty }
    /// Short, so that a stopped member drops off within about a second (3 s under a sanitizer).
    static var publishInterval: Duration { underSanitizer ? .seconds(1) : .milliseconds(300) }
    /// What the drop-off may take beyond the member timeout: the reader's 200 ms poll and this test's 100 ms
    /// polling of /status.json.
    /// What the drop-off may take beyond the member timeout: the page's own sampling and this test's polling,
    /// on a machine busy with the rest of the suite (4.6 s seen once with 1 s allowed).
    static var slack: Duration { underSanitizer ? .seconds(10) : .seconds(8) }

    static func registry() -> WorkerRegistry {
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData })
        return registry
    }

    static func document(_ port: UInt16) async throws -> StatusDocument {
        let response = try await HTTPProbe.request("http://127.0.0.1:\(port)/status.json")
        guard response.status == 200 else { throw ProbeFailure("/status.json answered \(response.status): \(response.body)") }
        return try JSONDecoder().decode(StatusDocument.self, from: Data(response.body.utf8))
    }

    static func memberIds(_ port: UInt16) async throws -> Set<String> {
        Set(try await document(port).group.members.map(\.status.instanceId))
    }

    @Test func bothMembersShowOnEitherPageAndAStoppedOneDropsOff() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 2) {
            $0.memberPerTopic = true
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.statusPage.enabled = true
            $0.statusPage.publishInterval = Self.publishInterval
            $0.statusPage.sampleInterval = .milliseconds(200)
        }
        let second = PushWorkerService(configuration: harness.configuration, registry: Self.registry())
        let secondTask = Task { try await second.run() }
        do {
            let firstPort = try await HTTPProbe.port(of: harness.service)
            let secondPort = try await HTTPProbe.port(of: second)
            let firstId = try await Self.document(firstPort).member.instanceId
            let secondId = try await Self.document(secondPort).member.instanceId
            #expect(firstId != secondId)
            var seen: (Set<String>, Set<String>) = ([], [])
            let both = try await HTTPProbe.eventually(timeout: .seconds(20)) {
                seen = (try await Self.memberIds(firstPort), try await Self.memberIds(secondPort))
                return seen.0 == [firstId, secondId] && seen.1 == [firstId, secondId]
            }
            #expect(both, "members seen: \(seen)")
            let group = try await Self.document(firstPort).group
            #expect(group.totals.members == 2)
            #expect(group.statusTopic == harness.configuration.statusPage.topic)
            #expect(group.memberTimeoutSeconds == Double(harness.configuration.statusPage.memberTimeout.wholeMilliseconds) / 1000)
            // Two members, two partitions of the input topic and two of the retry topic: once the group has
            // settled, one of each per member and no flag.
            let input = harness.configuration.inputTopics[0]
            let retry = harness.configuration.retries.topic
            var balance = group.balance
            let settled = try await HTTPProbe.eventually(timeout: .seconds(20)) {
                balance = try await Self.document(firstPort).group.balance
                return balance.members == 2 && balance.flags.isEmpty && balance.partitions == [input: 2, retry: 2]
            }
            #expect(settled, "\(balance)")

            // The second member stops: the first's page drops it once it has not been heard from for the
            // member timeout (3 × the publish interval), plus the reader's 200 ms poll.
            second.shutdown()
            try await secondTask.value
            let stoppedAt = ContinuousClock.now
            var remaining: Set<String> = []
            let dropped = try await HTTPProbe.eventually(timeout: .seconds(20)) {
                remaining = try await Self.memberIds(firstPort)
                return remaining == [firstId]
            }
            let took = ContinuousClock.now - stoppedAt
            #expect(dropped, "members left: \(remaining)")
            #expect(took <= harness.configuration.statusPage.memberTimeout + Self.slack, "dropped after \(took)")
        } catch {
            secondTask.cancel()
            _ = try? await secondTask.value
            try? await harness.shutdown()
            throw error
        }
        try await harness.shutdown()
    }

    /// Lets the `held` worker's jobs finish once opened.
    final class Gate: Sendable {
        private let opened = Mutex(false)
        func open() { opened.withLock { $0 = true } }
        var isOpen: Bool { opened.withLock { $0 } }
    }

    /// Counts the results a service delivered (the harness collects only its own service's).
    final class Tally: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func aSecondMemberOnOnePartitionIsSurplusAndIdleWhileTheOtherHasLag() async throws {
        let gate = Gate()
        var registry = Self.registry()
        registry.register(type: "held", worker: ClosureWorker { _ in
            while !gate.isOpen { try await Task.sleep(for: .milliseconds(20)) }
            return .newData
        })
        let harness = try await PushWorkerTestHarness.start(registry: registry, partitions: 1) {
            $0.memberPerTopic = true
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.kafka["statistics.interval.ms"] = "300"
            $0.statusPage.enabled = true
            $0.statusPage.publishInterval = Self.publishInterval
            $0.statusPage.sampleInterval = .milliseconds(200)
        }
        let secondResults = Tally()
        let second = PushWorkerService(configuration: harness.configuration, registry: registry) { _ in secondResults.add() }
        let secondTask = Task { try await second.run() }
        do {
            let ports = [try await HTTPProbe.port(of: harness.service), try await HTTPProbe.port(of: second)]
            let input = harness.configuration.inputTopics[0]
            // Both members on both pages, one of them beyond the input topic's single partition.
            var balances: [GroupBalance] = []
            let surplus = try await HTTPProbe.eventually(timeout: .seconds(30)) {
                balances = []
                for port in ports { balances.append(try await Self.document(port).group.balance) }
                return balances.allSatisfy { balance in
                    balance.members == 2 && balance.flags.contains { $0.kind == .surplusMembers && $0.topic == input && $0.members.count == 1 }
                }
            }
            #expect(surplus, "\(balances)")
            let flag = try #require(balances.first?.flags.first { $0.kind == .surplusMembers })
            #expect(flag.message.hasPrefix("2 members share the 1 partition of \(input): 1 member beyond the partition count; holding none of it: "))

            // Records the holder cannot finish yet: lag, and the other member is idle on both pages.
            for _ in 0..<5 { try await harness.produce(#"{"aps":{"content-available":1},"type":"held"}"#) }
            var documents: [StatusDocument] = []
            let idle = try await HTTPProbe.eventually(timeout: .seconds(30)) {
                documents = []
                for port in ports { documents.append(try await Self.document(port)) }
                return documents.allSatisfy { document in
                    document.group.balance.flags.contains { $0.kind == .idleMember && $0.amount > 0 }
                }
            }
            #expect(idle, "\(documents.map(\.group.balance))")
            let idleFlag = try #require(documents.first?.group.balance.flags.first { $0.kind == .idleMember })
            let holder = try #require(documents.first?.group.members.first { $0.status.assignment.contains("\(input)[0]") })
            #expect(idleFlag.members.count == 1 && !idleFlag.members.contains(holder.status.instanceId))
            #expect(idleFlag.message.contains("holds no input partition while the group has"))

            // The metrics of both: one flagged idle member, one member beyond the partitions, one input
            // partition between them.
            var scrapes: [Exposition] = []
            let flagged = try await HTTPProbe.eventually(timeout: .seconds(10)) {
                scrapes = []
                for port in ports { scrapes.append(Exposition(try await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").body)) }
                return scrapes.allSatisfy {
                    $0[#"pushworker_group_balance_flags{flag="idleMember"}"#] == 1 && $0[#"pushworker_group_balance_flags{flag="surplusMembers"}"#] == 1
                        && $0[#"pushworker_group_balance_flags{flag="skew"}"#] == 0
                } && scrapes.reduce(0) { $0 + ($1[#"pushworker_input_partitions_assigned{topic="\#(input)"}"#] ?? -10) } == 1
            }
            #expect(flagged, "\(scrapes.map { $0.text.split(separator: "\n").filter { $0.contains("balance_flags") || $0.contains("input_partitions") } })")
            gate.open()
            // Whichever member holds the partition delivers the results.
            #expect(try await HTTPProbe.eventually(timeout: .seconds(30)) { harness.receivedResults.count + secondResults.value >= 5 })
            second.shutdown()
            try await secondTask.value
        } catch {
            gate.open()
            secondTask.cancel()
            _ = try? await secondTask.value
            try? await harness.shutdown()
            throw error
        }
        try await harness.shutdown()
    }

    @Test func failedResultsShowWithoutTheirPayload() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.statusPage.enabled = true
            $0.statusPage.publishInterval = Self.publishInterval
            $0.statusPage.sampleInterval = .milliseconds(200)
        }
        do {
            let port = try await HTTPProbe.port(of: harness.service)
            let marker = "payload-marker-\(UUID().uuidString)"
            let invalid = try await harness.produce(#"{"aps":{"content-available":1},"type":"ok","x":"\#(marker)""#)
            try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#)
            _ = try await harness.results(count: 2)
            var body = ""
            let listed = try await HTTPProbe.eventually(timeout: .seconds(10)) {
                body = try await HTTPProbe.request("http://127.0.0.1:\(port)/status.json").body
                let document = try JSONDecoder().decode(StatusDocument.self, from: Data(body.utf8))
                return document.failures.contains { $0.offset == invalid.offset && $0.reason == "invalidPayload" }
                    && document.samples.contains { $0.resultsPerSecond["ok/newData", default: 0] > 0 }
            }
            #expect(listed, "\(body)")
            #expect(!body.contains(marker), "no payload in /status.json")
            let page = try await HTTPProbe.request("http://127.0.0.1:\(port)/")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(!page.body.contains("http://") && !page.body.contains("https://"), "nothing fetched from outside")
        } catch {
            try? await harness.shutdown()
            throw error
        }
        try await harness.shutdown()
    }

    @Test func theSwitchTurnsThePageAndThePublishingOff() async throws {
        let harness = try await PushWorkerTestHarness.start(registry: Self.registry(), partitions: 1) {
            $0.httpServer = HTTPServerConfiguration(enabled: true, host: "127.0.0.1", port: 0)
            $0.statusPage.enabled = false
        }
        do {
            let port = try await HTTPProbe.port(of: harness.service)
            try await harness.produce(#"{"aps":{"content-available":1},"type":"ok"}"#)
            _ = try await harness.results(count: 1)
            #expect(try await HTTPProbe.request("http://127.0.0.1:\(port)/").status == 404)
            #expect(try await HTTPProbe.request("http://127.0.0.1:\(port)/status.json").status == 404)
            #expect(try await HTTPProbe.request("http://127.0.0.1:\(port)/metrics").status == 200)
            // Nothing was written to the status topic (the mock creates it on the metadata request).
            let reader = try KafkaConsumer.reader(configuration: KafkaConfiguration(["bootstrap.servers": harness.cluster.bootstrapServers]))
            let topic = harness.configuration.statusPage.topic
            let high = try await DedicatedThread.run(name: "test-watermarks") {
                try reader.partitions(of: topic, timeoutMs: 5000).map { try reader.watermarks($0, timeoutMs: 5000).high }.reduce(0, +)
            }
            #expect(high == 0)
        } catch {
            try? await harness.shutdown()
            throw error
        }
        try await harness.shutdown()
    }
}
