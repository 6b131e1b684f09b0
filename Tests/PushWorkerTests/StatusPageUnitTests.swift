import Foundation
import PushWorkerCore
import PushWorkerKafka
import PushWorkerEndpoints
import PushWorkerMetrics
@testable import PushWorker
import Testing

/// The status page's pure parts: rings, quantiles, samples from metric readings, the board's members and
/// failures, and the `statusPage` configuration.
struct StatusPageUnitTests {
    @Test func ringKeepsTheNewestInOrder() {
        var ring = StatusRing<Int>(capacity: 3)
        #expect(ring.elements.isEmpty)
        #expect(ring.last == nil)
        for value in 1...2 { ring.append(value) }
        #expect(ring.elements == [1, 2])
        for value in 3...7 { ring.append(value) }
        #expect(ring.elements == [5, 6, 7])
        #expect(ring.count == 3)
        #expect(ring.last == 7)
    }

    @Test func quantilesInterpolateWithinTheirBucket() {
        // 10 observations ≤ 0.1 s, 10 more ≤ 1 s, none above.
        let buckets: [(upperBound: Double, cumulative: Double)] = [(0.1, 10), (1, 20), (.infinity, 20)]
        #expect(HistogramQuantile.estimate(0.5, buckets: buckets) == 0.1)
        #expect(abs((HistogramQuantile.estimate(0.75, buckets: buckets) ?? 0) - 0.55) < 1e-9)
        #expect(HistogramQuantile.estimate(0.99, buckets: [(0.1, 0), (1, 0), (.infinity, 4)]) == 1, "+Inf gives the largest bound")
        #expect(HistogramQuantile.estimate(0.5, buckets: [(0.1, 0), (.infinity, 0)]) == nil)
    }

    /// A reading of a real registry: the names, labels and buckets the service's metrics have.
    static func reading(consumed: Int, ok: Int, failed: Int, durations: [Double], atMs: Int64) throws -> MetricsReading {
        let metrics = try ServiceMetrics(registeredTypes: ["ok"])
        metrics.recordsConsumed.increment(by: Double(consumed))
        metrics.resultsAcknowledged(Array(repeating: ResultKey(type: "ok", result: .newData, reason: nil), count: ok)
            + Array(repeating: ResultKey(type: nil, result: .failed, reason: .invalidPayload), count: failed))
        for duration in durations { metrics.workerRan(type: "ok", durationMs: duration * 1000) }
        metrics.consumerLag.set(7, labels: ["pushes", "3"])
        return MetricsReading(metrics.registry.snapshot(), atMs: atMs)
    }

    @Test func sampleRatesAndPercentilesCoverTheIntervalOnly() throws {
        let first = try Self.reading(consumed: 10, ok: 8, failed: 2, durations: [0.004, 0.004], atMs: 1_000)
        // 2 s later: 40 more records, 30 more ok, 10 more failed; 10 runs of 2 s were added.
        let second = try Self.reading(consumed: 50, ok: 38, failed: 12, durations: [0.004, 0.004] + Array(repeating: 2, count: 10), atMs: 3_000)
        #expect(first.results["ok/newData"] == 8)
        #expect(first.results["(none)/failed"] == 2)
        let load = [JobDispatcher.TypeLoad(type: "ok", running: 2, waiting: 5, oldestRunningAge: .milliseconds(1500)),
                    JobDispatcher.TypeLoad(type: nil, running: 0, waiting: 1, oldestRunningAge: nil)]
        let sample = StatusSample(from: first, to: second, load: load, assignedPartitions: 4)
        #expect(sample.t == 3_000)
        #expect(sample.recordsPerSecond == 20)
        #expect(sample.resultsPerSecond["ok/newData"] == 15)
        #expect(sample.resultsPerSecond["(none)/failed"] == 5)
        // Only the 2 s runs fell in the interval: every percentile lies in the (1, 2.5] bucket, not near 4 ms.
        let ok = try #require(sample.durationSeconds["ok"])
        #expect(ok.p50 > 1 && ok.p99 <= 2.5)
        #expect(sample.lag["pushes[3]"] == 7)
        #expect(sample.running == ["ok": 2, "(none)": 0])
        #expect(sample.waiting == ["ok": 5, "(none)": 1])
        #expect(sample.oldestRunningSeconds == 1.5)
        #expect(sample.assignedPartitions == 4)
        // No runs in an interval: no percentiles for the type.
        #expect(StatusSample(from: second, to: second, load: [], assignedPartitions: 0).durationSeconds.isEmpty)
    }

    static func member(_ id: String, group: String = "g", sentAtMs: Int64, records: Double = 1) -> MemberStatus {
        MemberStatus(instanceId: id, groupId: group, memberId: "m-\(id)", host: "host-\(id)", pid: 1, version: "x", startedAtMs: 0,
                     sentAtMs: sentAtMs, assignment: ["pushes[0]"], recordsPerSecond: records, resultsPerSecond: records,
                     failedPerSecond: 0, jobsRunning: 1, jobsWaiting: 2, resultsWaiting: 0, lag: 3)
    }

    @Test func membersDropOffAfterTheTimeoutAndOtherGroupsAreIgnored() {
        var settings = StatusPageConfiguration()
        settings.publishInterval = .seconds(1)  // member timeout 3 s
        let board = StatusBoard(settings: settings, groupId: "g", host: "self", nowNs: 0, nowMs: 0)
        let second: Int64 = 1_000_000_000
        board.received(Self.member("a", sentAtMs: 10_000, records: 5), nowNs: 10 * second, nowMs: 10_000)
        board.received(Self.member("other-group", group: "h", sentAtMs: 10_000), nowNs: 10 * second, nowMs: 10_000)
        board.received(Self.member("stale", sentAtMs: 5_000), nowNs: 10 * second, nowMs: 10_000)
        board.received(Self.member(board.instanceId, sentAtMs: 10_000), nowNs: 10 * second, nowMs: 10_000)
        var document = board.document(assignment: [], nowNs: 12 * second, nowMs: 12_000)
        #expect(document.group.members.map(\.status.instanceId).sorted() == ["a", board.instanceId].sorted())
        #expect(document.group.members.first { !$0.isSelf }?.lastSeenSecondsAgo == 2)
        #expect(document.group.totals.members == 2)
        #expect(document.group.totals.recordsPerSecond == 5, "this member has no sample yet: 0 records/s")
        #expect(document.group.totals.jobsWaiting == 2)
        #expect(document.group.memberTimeoutSeconds == 3)
        // Unassigned since it started (nowNs 0).
        #expect(document.waitingForPartitionsSeconds == 12)
        // An older snapshot arriving late does not replace a newer one.
        board.received(Self.member("a", sentAtMs: 9_500, records: 1), nowNs: 12 * second, nowMs: 12_000)
        #expect(board.document(assignment: [], nowNs: 12 * second, nowMs: 12_000).group.totals.recordsPerSecond == 5)
        // Past 3 s without a snapshot: gone.
        document = board.document(assignment: [TopicPartition(topic: "pushes", partition: 0)], nowNs: 13 * second + 1, nowMs: 13_000)
        #expect(document.group.members.map(\.isSelf) == [true])
        #expect(document.waitingForPartitionsSeconds == nil)
        #expect(document.member.assignment == ["pushes[0]"])
    }

    @Test func theGroupSectionFlagsAnIdleMemberAndTheDocumentCarriesTheFlags() throws {
        var settings = StatusPageConfiguration()
        settings.publishInterval = .seconds(1)
        let board = StatusBoard(settings: settings, groupId: "g", inputTopics: ["pushes"], subscribedTopics: ["pushes", "retries"],
                                host: "self", nowNs: 0, nowMs: 0)
        let second: Int64 = 1_000_000_000
        // Another member holds both input partitions and has 1 234 records of input lag; this one holds the
        // retry topic's partitions only.
        var other = Self.member("a", sentAtMs: 10_000)
        other.assignment = ["pushes[0]", "pushes[1]"]
        other.inputLag = 1234
        other.partitionCounts = ["pushes": 2]
        board.received(other, nowNs: 10 * second, nowMs: 10_000)
        let mine: Set = [TopicPartition(topic: "retries", partition: 0), TopicPartition(topic: "retries", partition: 1)]
        let document = board.document(assignment: mine, nowNs: 11 * second, nowMs: 11_000)
        let balance = document.group.balance
        #expect(balance.partitions == ["pushes": 2, "retries": 2])
        #expect(balance.inputLag == 1234)
        let idle = try #require(balance.flags.first { $0.kind == .idleMember })
        #expect(idle.members == [board.instanceId])
        #expect(idle.message == "member \(board.instanceId) holds no input partition while the group has 1 234 records of input lag")
        #expect(balance.flags.map(\.kind) == [.idleMember, .skew, .skew], "2 and 0 of each topic")
        // In /status.json, under group.balance.
        let json = String(decoding: try JSONEncoder().encode(document), as: UTF8.self)
        #expect(json.contains(#""kind":"idleMember""#))
        #expect(json.contains("holds no input partition"))
        #expect(try JSONDecoder().decode(StatusDocument.self, from: Data(json.utf8)).group.balance == balance)
        // The page draws each flag as a banner under the group table.
        #expect(StatusPageHTML.page.contains(#"<div id="balance"></div>"#))
        #expect(StatusPageHTML.page.contains("renderBalance(doc.group.balance)"))
        // The metric: one idle member, two skewed topics, no surplus.
        let metrics = try ServiceMetrics(registeredTypes: [], inputTopics: ["pushes"])
        metrics.groupBalance(board.balance(nowNs: 11 * second, nowMs: 11_000))
        #expect(metrics.groupBalanceFlags.value(labels: ["idleMember"]) == 1)
        #expect(metrics.groupBalanceFlags.value(labels: ["surplusMembers"]) == 0)
        #expect(metrics.groupBalanceFlags.value(labels: ["skew"]) == 2)
        // The other member takes one partition of each topic over: balanced, every flag back to 0.
        other.sentAtMs = 11_500
        other.assignment = ["pushes[0]", "retries[0]"]
        board.received(other, nowNs: 11 * second + second / 2, nowMs: 11_500)
        let balanced = board.document(assignment: [TopicPartition(topic: "pushes", partition: 1), TopicPartition(topic: "retries", partition: 1)],
                                      nowNs: 12 * second, nowMs: 12_000).group.balance
        #expect(balanced.flags.isEmpty, "\(balanced.flags)")
        metrics.groupBalance(board.balance(nowNs: 12 * second, nowMs: 12_000))
        for kind in GroupBalance.Kind.allCases { #expect(metrics.groupBalanceFlags.value(labels: [kind.rawValue]) == 0) }
    }

    @Test func theOwnSnapshotCarriesInputLagAndPartitionCounts() throws {
        let board = StatusBoard(settings: StatusPageConfiguration(), groupId: "g", inputTopics: ["pushes"], subscribedTopics: ["pushes", "retries"])
        let metrics = try ServiceMetrics(registeredTypes: [])
        metrics.consumerLag.set(7, labels: ["pushes", "3"])
        metrics.consumerLag.set(5, labels: ["pushes", "1"])
        metrics.consumerLag.set(100, labels: ["retries", "3"])
        for atMs in [Int64(1_000), 3_000] {
            board.takeSample(MetricsReading(metrics.registry.snapshot(), atMs: atMs), load: [], assignment: [], memberId: nil,
                             partitionCounts: ["pushes": 4, "retries": 4])
        }
        let own = board.ownStatus()
        #expect(own.lag == 112)
        #expect(own.inputLag == 12, "the retry topic's lag is not input lag")
        #expect(own.partitionCounts == ["pushes": 4, "retries": 4])
    }

    @Test func inputPartitionsAreCountedPerInputTopic() throws {
        let metrics = try ServiceMetrics(registeredTypes: [], inputTopics: ["pushes", "more", "pushes"])
        _ = metrics.registry.snapshot()
        #expect(metrics.inputPartitionsAssigned.value(labels: ["pushes"]) == 0, "present from the start")
        metrics.rebalanced(.assigned([TopicPartition(topic: "pushes", partition: 0), TopicPartition(topic: "pushes", partition: 2),
                                      TopicPartition(topic: "retries", partition: 0)]))
        _ = metrics.registry.snapshot()
        #expect(metrics.inputPartitionsAssigned.value(labels: ["pushes"]) == 2)
        #expect(metrics.inputPartitionsAssigned.value(labels: ["more"]) == 0)
        #expect(metrics.inputPartitionsAssigned.value(labels: ["retries"]) == nil, "the retry topic is not an input topic")
        #expect(metrics.assignedPartitions.value() == 3)
        #expect(metrics.groupBalanceFlags.snapshot().samples.isEmpty, "no series until the status page sets them")
    }

    @Test func failuresAreNewestFirstBoundedAndCarryNoPayload() throws {
        var settings = StatusPageConfiguration()
        settings.failures = 2
        let board = StatusBoard(settings: settings, groupId: "g")
        for offset in 0..<3 {
            board.recordFailed(ResultRecord(
                messageId: "id-\(offset)", type: "t", result: .failed, reason: .workerError,
                detail: String(repeating: "x", count: 400), worker: "exec:t", source: RecordSource(topic: "pushes", partition: 1, offset: Int64(offset)),
                receivedAtMs: 0, startedAtMs: 0, finishedAtMs: Int64(offset), durationMs: 1, key: Array("secret-key".utf8)))
        }
        let failures = board.document(assignment: []).failures
        #expect(failures.map(\.messageId) == ["id-2", "id-1"])
        #expect(failures[0].detail?.count == FailedResultEntry.detailLimit + 1, "cut, with an ellipsis")
        #expect(failures[0].offset == 2)
        let json = String(decoding: try JSONEncoder().encode(board.document(assignment: [])), as: UTF8.self)
        #expect(!json.contains("secret-key"))
    }

    @Test func configurationReadsTheSectionAndTheSwitch() throws {
        let configuration = try ServiceConfiguration.load(json5: Data("""
            { statusPage: { topic: "ops-status", publishIntervalMs: 1500, sampleIntervalMs: 500, samples: 60, failures: 5, dygraphsPath: "/opt/dygraphs" } }
            """.utf8), environment: [:])
        #expect(configuration.statusPage.topic == "ops-status")
        #expect(configuration.statusPage.publishInterval == .milliseconds(1500))
        #expect(configuration.statusPage.memberTimeout == .milliseconds(4500))
        #expect(configuration.statusPage.sampleInterval == .milliseconds(500))
        #expect(configuration.statusPage.samples == 60)
        #expect(configuration.statusPage.failures == 5)
        #expect(configuration.statusPage.dygraphsPath == "/opt/dygraphs")
        #expect(ServiceConfiguration().statusPage.topic == "push-status")
        #expect(ServiceConfiguration().statusPage.enabled)
        let off = try ServiceConfiguration.load(json5: Data("{}".utf8), environment: ["PUSHWORKER_STATUS_PAGE_ENABLED": "false"])
        #expect(!off.statusPage.enabled)
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(json5: Data(#"{ statusPage: { topic: "push-results" } }"#.utf8), environment: [:])
        }
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.load(json5: Data(#"{ statusPage: { publishIntervalMs: 0 } }"#.utf8), environment: [:])
        }
        #expect(configuration.effectiveDescription().contains("\"ops-status\""))
    }
}

/// The page's routes with and without the plotting library's files.
struct StatusPageAssetsTests {
    static let document: @Sendable () -> StatusDocument = {
        StatusBoard(settings: StatusPageConfiguration(), groupId: "g").document(assignment: [])
    }

    @Test func missingDygraphsLeaves404sAndTheDocumentSaysSo() throws {
        let assets = StatusPageAssets(directory: "/nonexistent-\(UUID().uuidString)")
        #expect(!assets.available)
        let routes = assets.routes(document: Self.document)
        let request = EndpointRequest(method: "GET", path: "/static/dygraph.min.js")
        #expect(routes["/static/dygraph.min.js"]?(request).status == 404)
        #expect(routes["/static/dygraph.min.css"]?(request).status == 404)
        let page = try #require(routes["/"]?(EndpointRequest(method: "GET", path: "/")))
        #expect(page.status == 200)
        #expect(String(decoding: page.body, as: UTF8.self).contains("libjs-dygraphs"), "the page's note says what to install")
        let json = try #require(routes["/status.json"]?(EndpointRequest(method: "GET", path: "/status.json")))
        #expect(json.contentType == "application/json")
        let decoded = try JSONDecoder().decode(StatusDocument.self, from: Data(json.body))
        #expect(decoded.schema == 1)
        #expect(decoded.plots.library == "dygraphs")
    }

    @Test func presentFilesAreServedAsTheyAre() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dygraphs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "var Dygraph = 1;".write(to: directory.appendingPathComponent("dygraph.min.js"), atomically: true, encoding: .utf8)
        try ".dygraph-legend {}".write(to: directory.appendingPathComponent("dygraph.min.css"), atomically: true, encoding: .utf8)
        let assets = StatusPageAssets(directory: directory.path)
        #expect(assets.available)
        let routes = assets.routes(document: Self.document)
        let script = try #require(routes["/static/dygraph.min.js"]?(EndpointRequest(method: "GET", path: "/static/dygraph.min.js")))
        #expect(script.status == 200)
        #expect(script.body == Array("var Dygraph = 1;".utf8))
        #expect(script.contentType.hasPrefix("text/javascript"))
        #expect(routes["/static/dygraph.min.css"]?(EndpointRequest(method: "GET", path: "/static/dygraph.min.css")).contentType.hasPrefix("text/css") == true)
    }
}
