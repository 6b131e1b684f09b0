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

    @Test func levelsHaveSwiftLogsNamesAndOrder() {
        #expect(PushWorkerLogger.Level.allCases.map(\.rawValue) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        #expect(PushWorkerLogger.Level.allCases == PushWorkerLogger.Level.allCases.sorted())
    }
}
