import Foundation
import PushWorkerCore
import PushWorkerKafka

// The owner thread: the one thread that runs every transactional call (begin, produce, send offsets,
// commit, abort), in rounds of buffered outputs.

extension TransactionalPublisher {
    enum Decision {
        case exit
        /// Nothing to do for at most this many nanoseconds (a publish, a commit request, a rewind's end
        /// or the close wakes the owner earlier).
        case wait(Int64)
        case run([Entry], covering: UInt64)
    }

    func runOwner() {
        heartbeat.beat()
        defer {
            heartbeat.end()
            state.withLock { $0.finished = true }
        }
        while true {
            heartbeat.beat()
            do throws(KafkaTransactionError) {
                try producer.initTransactions(timeoutMs: Self.initTimeoutMs)
                break
            } catch where error.code == .retriable {
                count(.retried)
                if state.withLock({ $0.stopping }) { return }
            } catch {
                fail(error)
                return
            }
        }
        logger.info("transactions initialised (exactly-once results)")
        let intervalNs = settings.commitIntervalMs * 1_000_000
        while true {
            heartbeat.beat()
            let now = WallClock.monotonicNs()
            let decision = state.withLock { state -> Decision in
                if state.failure != nil { return .exit }
                if state.stopping && now >= state.giveUpAtNs { return .exit }
                if state.rewindRequested { return state.stopping ? .exit : .wait(intervalNs) }
                if now < state.retryAtNs && !state.stopping { return .wait(state.retryAtNs - now) }
                let asked = state.commitRequested > state.commitServed
                let age = state.buffer.first.map { now - $0.publishedAtNs }
                let due = asked || state.stopping || state.buffer.count >= settings.maxRecordsPerTransaction || (age ?? 0) >= intervalNs
                guard due else { return .wait(age.map { intervalNs - $0 } ?? intervalNs) }
                if state.buffer.isEmpty {
                    state.commitServed = state.commitRequested
                    return state.stopping ? .exit : .wait(intervalNs)
                }
                let batch = state.buffer
                state.buffer.removeAll(keepingCapacity: true)
                state.running = batch
                return .run(batch, covering: state.commitRequested)
            }
            switch decision {
            case .exit:
                return
            case .wait(let nanoseconds):
                // At least 1 ms, at most 100 ms (the owner's heartbeat for liveness).
                let waitNs = max(1_000_000, min(nanoseconds, 100_000_000))
                _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: waitNs)))
            case .run(let batch, let covering):
                let fatal = !runTransaction(batch)
                state.withLock { state in
                    state.running = nil
                    state.commitServed = max(state.commitServed, covering)
                }
                if fatal { return }
            }
        }
    }

    /// Runs one transaction with `batch` and the held entries its records let through: only outputs of
    /// records below their partition's new committable offset go in, together with that offset. Returns
    /// false after a fatal error (the owner ends).
    func runTransaction(_ batch: [Entry]) -> Bool {
        // Outputs of records not tracked (rewound since) or done already (a second result) are skipped.
        let (accepted, moved) = tracker.completeEach(batch.map { ($0.source, $0.offset) })
        let fresh = zip(batch, accepted).compactMap { $1 ? $0 : nil }
        let committable = Dictionary(tracker.committable.map { ($0.topicPartition, $0.offset) }, uniquingKeysWith: max)
        let entries = state.withLock { state -> [Entry] in
            state.held.append(contentsOf: fresh)
            var ready: [Entry] = []
            var waiting: [Entry] = []
            for entry in state.held {
                if let next = committable[entry.source], entry.offset < next { ready.append(entry) } else { waiting.append(entry) }
            }
            state.held = waiting
            state.running = ready
            return ready
        }
        if entries.isEmpty && moved.isEmpty { return true }
        var open = false
        do throws(KafkaTransactionError) {
            try producer.beginTransaction()
            open = true
            for entry in entries {
                for output in entry.outputs { try produce(output, of: entry) }
            }
            if !moved.isEmpty {
                guard let consumer = consumer.value else {
                    throw KafkaTransactionError(.abortable, operation: "rd_kafka_send_offsets_to_transaction", message: "the consumer is gone")
                }
                // Each member's offsets with its own group metadata (KIP-447 checks its generation).
                for (member, offsets) in consumer.byMember(moved, topic: \.topicPartition.topic) {
                    try retrying { () throws(KafkaTransactionError) in
                        try producer.sendOffsetsToTransaction(offsets, consumer: member, timeoutMs: operationTimeoutMs)
                    }
                }
            }
            try retrying { () throws(KafkaTransactionError) in try producer.commitTransaction(timeoutMs: operationTimeoutMs) }
        } catch where error.code == .fatal {
            fail(error)
            return false
        } catch {
            return abort(after: error, open: open, records: entries.count)
        }
        state.withLock { state in
            for offset in moved where state.owned.contains(offset.topicPartition) { state.resumeAt[offset.topicPartition] = offset.offset }
            state.aborts = 0
            state.retryAtNs = 0
        }
        count(.committed)
        metrics.resultsAcknowledged(entries.compactMap { $0.result.map(ResultKey.init) })
        let retried = entries.compactMap { $0.result?.willRetry == true ? $0.result.map(ResultKey.init) : nil }
        if !retried.isEmpty { metrics.retriedResultsAcknowledged(retried) }
        metrics.deadLettersAcknowledged(entries.filter { $0.outputs.contains(where: \.isDeadLetter) }.compactMap { $0.result.map(ResultKey.init) })
        if let onDelivered {
            for entry in entries {
                for output in entry.outputs where output.kind == .result { onDelivered(output.record) }
            }
        }
        return true
    }

    /// Produces one output in the open transaction: waits while librdkafka's queue is full; replaces a
    /// record that can never be produced as it is by a smaller one (as ``ResultPublisher`` does).
    /// - Throws: an abortable ``KafkaTransactionError`` when librdkafka refuses the record otherwise
    ///   (fatal when the producer has a fatal error).
    func produce(_ output: Output, of entry: Entry) throws(KafkaTransactionError) {
        var output = output
        while true {
            do throws(KafkaError) {
                try producer.produce(output.record, token: 0)
                return
            } catch {
                if error.code == .queueFull {
                    heartbeat.beat()
                    Thread.sleep(forTimeInterval: 0.001)
                    continue
                }
                let failure = error.produceFailure
                metrics.produceError(topic: output.record.topic, failure: failure)
                if failure == .recordRejected,
                   let (record, stage, name) = ResultPublisher.replacement(of: output.record, result: output.kind == .result ? entry.result : nil, isDeadLetter: output.isDeadLetter, stage: output.stage, error: error) {
                    let kind = output.isDeadLetter ? "deadLetter" : "result"
                    metrics.replaced(kind: kind, stage: name)
                    onReplaced()
                    logger.error(output.isDeadLetter ? "a dead letter can never be produced as it is; a smaller stub replaces it" : "a result can never be produced as it is; a smaller one replaces it",
                                 metadata: ["error": error.message, "replacement": name, "sourcePartition": "\(entry.source)", "sourceOffset": String(entry.offset)])
                    output.record = record
                    output.stage = stage
                    continue
                }
                throw KafkaTransactionError(failure == .fatal ? .fatal : .abortable, operation: "rd_kafka_producev",
                                            message: "produce to \(output.record.topic) in a transaction failed: \(error.message)",
                                            rdKafkaError: error.rdKafkaError, rdKafkaErrorName: error.rdKafkaErrorName ?? "")
            }
        }
    }

    /// Calls `body` until it does not fail retriably; a retriable failure past the close's give-up time
    /// counts as abortable.
    func retrying(_ body: () throws(KafkaTransactionError) -> Void) throws(KafkaTransactionError) {
        while true {
            heartbeat.beat()
            do throws(KafkaTransactionError) {
                try body()
                return
            } catch where error.code == .retriable {
                count(.retried)
                logger.warning("a transactional call failed retriably; calling it again", metadata: ["error": error.message])
                if WallClock.monotonicNs() >= state.withLock({ $0.giveUpAtNs }) {
                    throw KafkaTransactionError(.abortable, operation: error.operation, message: "\(error.message); given up at the shutdown's timeout",
                                                rdKafkaError: error.rdKafkaError, rdKafkaErrorName: error.rdKafkaErrorName)
                }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    /// Aborts the open transaction after `error` and asks the consumer loop to rewind. Returns false after
    /// a fatal error (the owner ends).
    func abort(after error: KafkaTransactionError, open: Bool, records: Int) -> Bool {
        logger.warning("transaction failed: aborting it; its input records are read and run again (exactly-once results, worker side effects at-least-once)",
                       metadata: ["error": error.message, "class": error.code.description, "records": String(records)])
        if open {
            do throws(KafkaTransactionError) {
                try retrying { () throws(KafkaTransactionError) in try producer.abortTransaction(timeoutMs: operationTimeoutMs) }
            } catch {
                fail(error.code == .fatal ? error : KafkaTransactionError(.fatal, operation: error.operation, message: "cannot abort the transaction: \(error.message)",
                                                                          rdKafkaError: error.rdKafkaError, rdKafkaErrorName: error.rdKafkaErrorName))
                return false
            }
        }
        count(.aborted)
        state.withLock { state in
            state.rewindRequested = true
            state.aborts += 1
            let first = Self.firstBackoff.components.seconds * 1_000_000_000 + Self.firstBackoff.components.attoseconds / 1_000_000_000
            let maximum = Self.maximumBackoff.components.seconds * 1_000_000_000
            state.retryAtNs = WallClock.monotonicNs() + min(maximum, first << min(state.aborts - 1, 20))
        }
        return true
    }

    func fail(_ error: KafkaTransactionError) {
        logger.error("the transactional producer cannot go on; stopping the service (restart it: its transactional.id fences this instance and aborts what it left open). With _FENCED another member runs with the same transactional.id: give each member its own (exactlyOnce.transactionalId)",
                     metadata: ["error": error.message, "class": error.code.description])
        state.withLock { $0.failure = error }
    }

    func count(_ event: TransactionEvent) {
        switch event {
        case .committed: metrics.transactionsCommitted.increment()
        case .aborted: metrics.transactionsAborted.increment()
        case .retried: metrics.transactionsRetried.increment()
        }
        onTransaction(event)
    }
}
