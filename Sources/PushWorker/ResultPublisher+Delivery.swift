import Foundation
import PushWorkerCore
import PushWorkerKafka

// What follows librdkafka's delivery reports and refusals: acknowledged records, kept records, backoff.

extension ResultPublisher {
    /// A record librdkafka did not take (`produce` threw) or did not deliver (its delivery report), with
    /// the token it was sent with.
    typealias Failure = (token: UInt64, outgoing: Outgoing, error: KafkaError)

    /// Deals with records librdkafka did not take or did not deliver: replaces each that can never be
    /// produced as it is, keeps the others at their place in their lane and backs those lanes off (a full
    /// queue only waits for the next round). One lock for the whole batch, each lane merged once, so a
    /// burst of failures (a broker outage failing every record in flight) costs O(records) and not more.
    /// Returns the lanes that can be produced again at once (a replacement waits there).
    func failed(_ failures: [Failure]) -> Set<TopicPartition> {
        var back: [TopicPartition: [Outgoing]] = [:]
        var backOff: Set<TopicPartition> = []
        var replaced: Set<TopicPartition> = []
        var counts: [String: (topic: String, failure: ProduceFailure, count: Int)] = [:]
        for (_, outgoing, error) in failures {
            let failure = error.produceFailure
            let topic = outgoing.record.topic
            if error.code == .queueFull {
                // librdkafka's queue is full: not a failure of the lane, retried at the next round.
                back[outgoing.source, default: []].append(outgoing)
                continue
            }
            counts["\(failure.rawValue)|\(topic)", default: (topic, failure, 0)].count += 1
            if failure == .recordRejected,
               let (record, stage, stageName) = Self.replacement(of: outgoing.record, result: outgoing.result, isDeadLetter: outgoing.isDeadLetter, stage: outgoing.stage, error: error) {
                var replacement = outgoing
                replacement.record = record
                replacement.stage = stage
                let kind = outgoing.isDeadLetter ? "deadLetter" : "result"
                metrics.replaced(kind: kind, stage: stageName)
                onReplaced()
                log(.error, "\(kind)-replaced", outgoing.isDeadLetter
                        ? "a dead letter can never be produced as it is; a smaller stub replaces it (docs/guarantees.md)"
                        : "a result can never be produced as it is; a smaller one replaces it (docs/guarantees.md)",
                    error: error, topic: topic, outgoing: outgoing, extra: ["replacement": stageName])
                back[outgoing.source, default: []].append(replacement)
                replaced.insert(outgoing.source)
                continue
            }
            back[outgoing.source, default: []].append(outgoing)
            backOff.insert(outgoing.source)
            let what = outgoing.isDeadLetter ? "a dead letter" : "a result"
            switch failure {
            case .transient:
                log(.warning, "transient-\(topic)", "cannot deliver \(what) yet; kept and produced again after a backoff",
                    error: error, topic: topic, outgoing: outgoing)
            case .topicRefused:
                log(.error, "refused-\(topic)", "the topic refuses \(what); kept, and its input partition waits, until the topic accepts writes (check its ACLs and that it exists; docs/guarantees.md)",
                    error: error, topic: topic, outgoing: outgoing)
            case .fatal:
                log(.error, "fatal-\(topic)", "the producer can no longer produce; \(what) is kept; restart pushworker",
                    error: error, topic: topic, outgoing: outgoing)
            case .recordRejected:
                log(.error, "rejected-\(topic)", "even the smallest replacement of \(what) is refused; kept, and its input partition waits (raise message.max.bytes)",
                    error: error, topic: topic, outgoing: outgoing)
            }
        }
        for (topic, failure, count) in counts.values { metrics.produceError(topic: topic, failure: failure, count: count) }
        let tokens = Set(failures.map(\.token))
        let now = WallClock.monotonicNs()
        state.withLock { state in
            for (tp, outgoing) in back {
                var lane = state.lanes[tp] ?? Lane()
                if let probe = lane.probe, tokens.contains(probe) { lane.probe = nil }
                // A partition released meanwhile keeps nothing: its next owner reads the records again.
                guard state.owned.contains(tp) else {
                    state.lanes[tp] = lane.isIdle || (lane.probe == nil && !lane.draining && lane.waiting.isEmpty) ? nil : lane
                    continue
                }
                lane.insert(contentsOf: outgoing)
                if backOff.contains(tp) {
                    lane.failing = true
                    lane.failures += 1
                    let backoffNs = min(Self.maximumBackoff.nanoseconds, Self.firstBackoff.nanoseconds << min(lane.failures - 1, 20))
                    lane.retryAtNs = now + backoffNs
                }
                state.lanes[tp] = lane
            }
        }
        return replaced.subtracting(backOff)
    }

    func delivered(
        _ reports: [KafkaDeliveryReport],
        storeOffsets: @Sendable ([TopicPartitionOffset]) -> Void,
        onDelivered: (@Sendable (KafkaOutgoingRecord) -> Void)?
    ) {
        var acknowledged: [(TopicPartition, Int64)] = []
        acknowledged.reserveCapacity(reports.count)
        var labels: [ResultKey] = []
        labels.reserveCapacity(reports.count)
        var deadLetterLabels: [ResultKey] = []
        var retriedLabels: [ResultKey] = []
        var failed: [Failure] = []
        var records: [KafkaOutgoingRecord] = []
        var roomFreed = false
        state.withLock { state in
            for report in reports {
                guard let outgoing = state.inFlight.removeValue(forKey: report.token) else { continue }
                if let error = report.error {
                    failed.append((report.token, outgoing, error))
                    continue
                }
                if outgoing.isProbe, state.lanes[outgoing.source]?.probe == report.token {
                    // The lane delivers again: the rest of it follows in order.
                    state.lanes[outgoing.source]?.probe = nil
                    state.lanes[outgoing.source]?.failing = false
                    state.lanes[outgoing.source]?.failures = 0
                    state.lanes[outgoing.source]?.retryAtNs = 0
                }
                if outgoing.isDeadLetter {
                    deadLetterLabels.append(outgoing.labels)
                } else if outgoing.isRetryTopicCopy {
                    // Counted when sent (``ServiceMetrics/retryTopicRecords``); not a result.
                } else {
                    labels.append(outgoing.labels)
                    if outgoing.result?.willRetry == true { retriedLabels.append(outgoing.labels) }
                    if onDelivered != nil { records.append(outgoing.record) }
                }
                if outgoing.hasCompanion {
                    let position = Position(partition: outgoing.source, offset: outgoing.offset)
                    let left = (state.partsLeft[position] ?? 1) - 1
                    state.partsLeft[position] = left > 0 ? left : nil
                    if left > 0 { continue }
                }
                acknowledged.append((outgoing.source, outgoing.offset))
            }
            if state.roomWanted && state.inFlight.count < Self.maxInFlightRecords {
                state.roomWanted = false
                roomFreed = true
            }
        }
        if roomFreed { room.signal() }
        if !acknowledged.isEmpty {
            let moved = tracker.complete(acknowledged)
            if !moved.isEmpty { storeOffsets(moved) }
        }
        metrics.resultsAcknowledged(labels)
        metrics.deadLettersAcknowledged(deadLetterLabels)
        if !retriedLabels.isEmpty { metrics.retriedResultsAcknowledged(retriedLabels) }
        if let onDelivered { records.forEach(onDelivered) }
        if !failed.isEmpty {
            onRetried(failed.count)
            metrics.deliveryRetries.increment(by: Double(failed.count))
            _ = self.failed(failed)
        }
        retryBacklog()
    }

    func log(_ level: PushWorkerLogger.Level, _ kind: String, _ message: String, error: KafkaError, topic: String, outgoing: Outgoing, extra: [String: String] = [:]) {
        let now = WallClock.monotonicNs()
        let skipped = state.withLock { state -> Int? in
            let last = state.lastLog[kind]
            if let last, now - last.atNs < 1_000_000_000 {
                state.lastLog[kind] = (last.atNs, last.skipped + 1)
                return nil
            }
            state.lastLog[kind] = (now, 0)
            return last?.skipped ?? 0
        }
        guard let skipped else { return }
        var metadata = [
            "error": error.message, "errorName": error.rdKafkaErrorName ?? "", "class": error.produceFailure.rawValue, "topic": topic,
            "sourceTopic": outgoing.source.topic, "sourcePartition": String(outgoing.source.partition), "sourceOffset": String(outgoing.offset),
        ]
        if skipped > 0 { metadata["similarLinesSkipped"] = String(skipped) }
        metadata.merge(extra) { $1 }
        switch level {
        case .error: logger.error(message, metadata: metadata)
        default: logger.warning(message, metadata: metadata)
        }
    }
}

extension Duration {
    /// The duration in nanoseconds (saturating).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
