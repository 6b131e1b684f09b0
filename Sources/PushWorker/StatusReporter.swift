import PushWorkerCore
import PushWorkerKafka

/// The service's periodic log lines, read from its metrics (never from the hot path): the progress line
/// at `info` every ``ServiceConfiguration/progressLogInterval`` (``ProgressLine``), and, while the member
/// has no partitions, a warning every ``ServiceConfiguration/unassignedWarningInterval`` with how long it has waited and the
/// likely cause (``UnassignedDiagnosis``).
///
/// ``run()`` is an async loop on the cooperative pool: it only sleeps, takes a metrics snapshot (the same
/// work as a `/metrics` scrape, without rendering) and logs.
final class StatusReporter: Sendable {
    private let metrics: ServiceMetrics
    private let logger: PushWorkerLogger
    private let progressInterval: Duration
    private let unassignedWarningInterval: Duration
    private let statisticsIntervalMs: Int
    private let sessionTimeoutMs: Int
    private let maxPollIntervalMs: Int
    private let subscribedTopics: [String]
    private let groupId: String
    private let stopping: @Sendable () -> Bool

    /// Creates a reporter.
    /// - Parameters:
    ///   - progressInterval: the progress line's interval, at least 1 s; zero or less: no progress line.
    ///   - unassignedWarningInterval: the warning's interval, at least 1 s; zero or less: no warning.
    ///   - statisticsIntervalMs: the consumer's `statistics.interval.ms` (0: off).
    ///   - sessionTimeoutMs: the consumer's `session.timeout.ms`, for the warning's explanation.
    ///   - maxPollIntervalMs: the consumer's `max.poll.interval.ms`, for the warning's explanation.
    ///   - stopping: whether the service is stopping (no warning then).
    init(metrics: ServiceMetrics, logger: PushWorkerLogger, progressInterval: Duration, unassignedWarningInterval: Duration,
         statisticsIntervalMs: Int, sessionTimeoutMs: Int, maxPollIntervalMs: Int, subscribedTopics: [String], groupId: String,
         stopping: @escaping @Sendable () -> Bool) {
        self.metrics = metrics
        self.logger = logger
        // At most one line a second however short the setting: each line costs a metrics snapshot.
        self.progressInterval = progressInterval <= .zero ? .zero : max(.seconds(1), progressInterval.asWaitSetting)
        self.unassignedWarningInterval = unassignedWarningInterval <= .zero ? .zero : max(.seconds(1), unassignedWarningInterval.asWaitSetting)
        self.statisticsIntervalMs = statisticsIntervalMs
        self.sessionTimeoutMs = sessionTimeoutMs
        self.maxPollIntervalMs = maxPollIntervalMs
        self.subscribedTopics = subscribedTopics
        self.groupId = groupId
        self.stopping = stopping
    }

    /// Logs until the task running it is cancelled. The assignment is looked at once a second.
    func run() async {
        let clock = ContinuousClock()
        let start = clock.now
        let progressOn = progressInterval > .zero
        let warningOn = unassignedWarningInterval > .zero
        let checkEvery: Duration = .seconds(1)
        var previous = ProgressSample()
        var previousAt = start
        var nextProgress = start + progressInterval
        var unassignedSince: ContinuousClock.Instant? = start
        var nextWarning = start + unassignedWarningInterval
        var warned = false
        while !Task.isCancelled {
            let now = clock.now
            var wake = now + checkEvery
            if progressOn { wake = min(wake, nextProgress) }
            do { try await Task.sleep(until: wake, clock: clock) } catch { return }
            let at = clock.now
            if progressOn && at >= nextProgress {
                let current = ProgressSample(metrics.registry.snapshot())
                logger.info(ProgressLine.message, metadata: ProgressLine.metadata(previous: previous, current: current, elapsed: at - previousAt))
                previous = current
                previousAt = at
                // The next line one interval after this one (not catching up after a late wake).
                nextProgress = at + progressInterval
            }
            guard warningOn else { continue }
            guard metrics.assigned.isEmpty else {
                if let since = unassignedSince, warned {
                    logger.info("partitions assigned after waiting \(Self.seconds(at - since)) s", metadata: ["waitedSeconds": Self.seconds(at - since)])
                }
                unassignedSince = nil
                warned = false
                continue
            }
            guard let since = unassignedSince else {
                unassignedSince = at
                nextWarning = at + unassignedWarningInterval
                continue
            }
            // Every interval of waiting (10 s, 20 s, …); a late wake does not repeat it.
            guard at >= nextWarning, !stopping() else { continue }
            while nextWarning <= at { nextWarning += unassignedWarningInterval }
            warned = true
            warn(waited: at - since)
        }
    }

    private func warn(waited: Duration) {
        let diagnosis = UnassignedDiagnosis.diagnose(
            statistics: metrics.latestStatistics(.consumer), statisticsIntervalMs: statisticsIntervalMs, subscribedTopics: subscribedTopics)
        logger.warning("no partitions assigned for \(Self.seconds(waited)) s: \(diagnosis.explanation(sessionTimeoutMs: sessionTimeoutMs, maxPollIntervalMs: maxPollIntervalMs))", metadata: [
            "waitedSeconds": Self.seconds(waited), "cause": diagnosis.name, "groupId": groupId,
            "topics": subscribedTopics.joined(separator: ","),
        ])
    }

    /// Whole seconds of `duration`.
    private static func seconds(_ duration: Duration) -> String { String(duration.components.seconds) }
}
