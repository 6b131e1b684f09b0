import PushWorkerCore
import PushWorkerKafka
import Synchronization
import Testing
@testable import PushWorker

/// librdkafka's repeated warnings (a rebalance's refused commits, 5 a second) are logged once per window,
/// with the count of those left out; other kinds and lower severities pass.
@Suite struct KafkaLogRateLimiterTests {
    final class ManualClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 = $0.advanced(by: duration) } }
    }

    static func message(_ text: String, facility: String = "COMMITFAIL", severity: Int32 = 4) -> KafkaLogMessage {
        KafkaLogMessage(severity: severity, facility: facility, message: text, client: "rdkafka#consumer-1")
    }

    @Test func repeatsOfOneKindAreLoggedOncePerWindowWithTheirCount() {
        let clock = ManualClock()
        let limiter = KafkaLogRateLimiter(window: .seconds(10), now: { clock.now })
        let refused = "Offset commit (cgrp auto commit timer) failed for 1/4 partition(s) in join-state wait-join: Broker: Group rebalance in progress"
        #expect(limiter.admit(Self.message(refused)) == 0)
        for offset in 0..<24 {
            clock.advance(.milliseconds(200))
            // The text after the first 40 bytes may differ (partition counts, offsets): still the same kind.
            #expect(limiter.admit(Self.message(refused + " \(offset)")) == nil)
        }
        // Another facility, another start of text and a notice all pass meanwhile.
        #expect(limiter.admit(Self.message(refused, facility: "FAIL")) == 0)
        #expect(limiter.admit(Self.message("Connect to ipv4#127.0.0.1:9092 failed: Connection refused")) == 0)
        #expect(limiter.admit(Self.message(refused, severity: 5)) == 0)
        clock.advance(.seconds(6))
        #expect(limiter.admit(Self.message(refused)) == 24, "the first one after the window counts those left out")
        #expect(limiter.admit(Self.message(refused)) == nil)
    }

    @Test func theHandlerLeavesRepeatsOutAndSaysHowManyItLeftOut() {
        let clock = ManualClock()
        let limiter = KafkaLogRateLimiter(now: { clock.now })
        let refused = Self.message("Offset commit (cgrp auto commit timer) failed: rebalance in progress")
        let first = PushWorkerLogger.kafkaLogLine(refused, limiter: limiter)
        #expect(first?.level == .warning)
        #expect(first?.metadata == ["facility": "COMMITFAIL", "client": "rdkafka#consumer-1"])
        for _ in 0..<4 { #expect(PushWorkerLogger.kafkaLogLine(refused, limiter: limiter) == nil) }
        clock.advance(.seconds(11))
        #expect(PushWorkerLogger.kafkaLogLine(refused, limiter: limiter)?.metadata["suppressed"] == "4")
        #expect(PushWorkerLogger.kafkaLogLine(Self.message("x", severity: 3), limiter: limiter)?.level == .error)
        #expect(PushWorkerLogger.kafkaLogLine(Self.message("y", severity: 7), limiter: limiter)?.level == .debug)
    }
}
