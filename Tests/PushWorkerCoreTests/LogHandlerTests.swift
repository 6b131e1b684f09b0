import Foundation
import PushWorkerCore
import Synchronization
import Testing

/// The logger's handler: the default stderr lines, and another handler (e.g. a swift-log adapter) installed
/// with `bootstrap(level:handler:)`.
@Suite(.serialized) struct LogHandlerTests {
    /// Keeps what it is handed.
    final class Collector: PushWorkerLogHandler {
        struct Entry: Equatable {
            var level: PushWorkerLogger.Level
            var label: String
            var message: String
            var metadata: PushWorkerLogger.Metadata
        }
        let entries = Mutex<[Entry]>([])

        func log(level: PushWorkerLogger.Level, label: String, message: String, metadata: PushWorkerLogger.Metadata) {
            entries.withLock { $0.append(Entry(level: level, label: label, message: message, metadata: metadata)) }
        }
    }

    /// Lines a `StandardErrorLogHandler` writes, collected.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var sink: PushWorkerLogger.Sink { { line in self.lines.withLock { $0.append(line) } } }
    }

    @Test func theStandardErrorHandlerWritesTextAndJSONLines() throws {
        let lines = Lines()
        let text = StandardErrorLogHandler(format: .text, sink: lines.sink)
        text.log(level: .warning, label: "pushworker.test", message: "slow worker", metadata: ["type": "content update", "partition": "2"])
        let json = StandardErrorLogHandler(format: .json, sink: lines.sink)
        json.log(level: .error, label: "pushworker.test", message: "bad\nline", metadata: ["messageId": "m-1"])
        let written = lines.lines.withLock { $0 }
        #expect(written.count == 2)
        let line = try #require(written.first)
        #expect(line.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z warning \[pushworker\.test\] slow worker partition=2 type="content update"$"#,
                           options: .regularExpression) != nil, "\(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written[1].utf8)) as? [String: String])
        #expect(object["level"] == "error")
        #expect(object["label"] == "pushworker.test")
        #expect(object["message"] == "bad\nline")
        #expect(object["messageId"] == "m-1")
        #expect(object["time"]?.hasSuffix("Z") == true)
    }

    @Test func aBootstrappedHandlerGetsEveryEnabledMessageAsGiven() {
        let collector = Collector()
        let label = "pushworker.handler-test-\(UUID().uuidString.prefix(8))"
        PushWorkerLogger.bootstrap(level: .info, handler: collector)
        defer { PushWorkerLogger.bootstrap(level: .info, format: .text) }  // the default again: stderr, text
        let logger = PushWorkerLogger(label: label)
        logger.debug("below the level")
        logger.info("taken", metadata: ["type": "a\nb"])
        logger.critical("also taken")
        let mine = collector.entries.withLock { $0.filter { $0.label == label } }
        #expect(mine == [
            Collector.Entry(level: .info, label: label, message: "taken", metadata: ["type": "a\nb"]),
            Collector.Entry(level: .critical, label: label, message: "also taken", metadata: [:]),
        ])
    }

    /// A job from `pushes` partition 3 offset 42, second attempt, started by the executor's worker
    /// `swift:content-update`.
    static func startedJob() -> Job {
        var job = Job(messageId: "m-7", type: "content-update", value: Array(#"{"aps":{"content-available":1},"type":"content-update"}"#.utf8),
                      source: RecordSource(topic: "pushes", partition: 3, offset: 42), attempt: 2)
        job.start(budget: .seconds(5), at: .now, worker: "swift:content-update")
        return job
    }

    static let jobMetadata: PushWorkerLogger.Metadata = [
        "messageId": "m-7", "type": "content-update", "topic": "pushes", "partition": "3", "offset": "42", "attempt": "2",
        "worker": "swift:content-update",
    ]

    @Test func loggerMetadataGoesWithEveryLineAndTheLinesOwnKeysWin() {
        let collector = Collector()
        PushWorkerLogger.bootstrap(level: .info, handler: collector)
        defer { PushWorkerLogger.bootstrap(level: .info, format: .text) }
        let label = "pushworker.metadata-test-\(UUID().uuidString.prefix(8))"
        var logger = PushWorkerLogger(label: label, metadata: ["a": "1"])
        logger[metadataKey: "b"] = "2"
        logger[metadataKey: "gone"] = "x"
        logger[metadataKey: "gone"] = nil
        #expect(logger[metadataKey: "b"] == "2" && logger[metadataKey: "gone"] == nil)
        #expect(logger.metadata == ["a": "1", "b": "2"])
        logger.info("plain")
        logger.warning("own keys", metadata: ["b": "line", "c": "3"])
        // A disabled level evaluates neither the message nor the line's metadata, logger metadata or not.
        let evaluated = Mutex(0)
        logger.debug({ evaluated.withLock { $0 += 1 }; return "hidden" }(), metadata: { evaluated.withLock { $0 += 1 }; return ["d": "4"] }())
        #expect(evaluated.withLock { $0 } == 0)
        let mine = collector.entries.withLock { $0.filter { $0.label == label } }
        #expect(mine == [
            Collector.Entry(level: .info, label: label, message: "plain", metadata: ["a": "1", "b": "2"]),
            Collector.Entry(level: .warning, label: label, message: "own keys", metadata: ["a": "1", "b": "line", "c": "3"]),
        ])
    }

    @Test func aJobsLoggerCarriesTheRecordsMetadata() {
        let collector = Collector()
        PushWorkerLogger.bootstrap(level: .info, handler: collector)
        defer { PushWorkerLogger.bootstrap(level: .info, format: .text) }
        let job = Self.startedJob()
        #expect(job.logger.label == "pushworker.worker" && job.logger.label == Job.loggerLabel)
        #expect(job.logger.metadata == Self.jobMetadata)
        job.logger.info("fetched", metadata: ["contentId": "c-1", "offset": "mine"])
        let line = collector.entries.withLock { $0.last { $0.label == Job.loggerLabel } }
        var expected = Self.jobMetadata
        expected["contentId"] = "c-1"
        expected["offset"] = "mine"
        #expect(line == Collector.Entry(level: .info, label: "pushworker.worker", message: "fetched", metadata: expected))
        // Before a worker starts it (a job built by hand), there is no worker name; no type reads as "".
        let unstarted = Job(messageId: "m", type: nil, value: [], source: RecordSource(topic: "t", partition: 0, offset: 1))
        #expect(unstarted.logger.metadata == ["messageId": "m", "type": "", "topic": "t", "partition": "0", "offset": "1", "attempt": "1"])
    }

    @Test func theTextAndJSONFormatsShowTheJobsMetadata() throws {
        let lines = Lines()
        PushWorkerLogger.bootstrap(level: .info, handler: StandardErrorLogHandler(format: .text, sink: lines.sink))
        defer { PushWorkerLogger.bootstrap(level: .info, format: .text) }
        let logger = Self.startedJob().logger
        logger.notice("cache miss", metadata: ["contentId": "c 1"])
        PushWorkerLogger.bootstrap(level: .info, handler: StandardErrorLogHandler(format: .json, sink: lines.sink))
        logger.notice("cache miss", metadata: ["contentId": "c 1"])
        let mine = lines.lines.withLock { $0.filter { $0.contains("pushworker.worker") } }
        #expect(mine.count == 2)
        let text = try #require(mine.first)
        #expect(text.hasSuffix(#" notice [pushworker.worker] cache miss attempt=2 contentId="c 1" messageId=m-7 offset=42 partition=3 topic=pushes type=content-update worker=swift:content-update"#), "\(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(mine[1].utf8)) as? [String: String])
        var expected = Self.jobMetadata
        expected["contentId"] = "c 1"
        #expect(object.filter { !["time", "level", "label", "message"].contains($0.key) } == expected)
        #expect(object["label"] == "pushworker.worker" && object["message"] == "cache miss" && object["level"] == "notice")
    }

    @Test func levelsHaveSwiftLogsNamesAndOrder() {
        #expect(PushWorkerLogger.Level.allCases.map(\.rawValue) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        #expect(PushWorkerLogger.Level.allCases == PushWorkerLogger.Level.allCases.sorted())
    }
}
