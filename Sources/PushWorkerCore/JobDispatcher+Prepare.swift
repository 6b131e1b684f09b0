// From an input record to a routed job or an immediate result (contract section 2), and the results of
// jobs.

extension JobDispatcher {
    enum Prepared {
        case result(ResultRecord)
        case job(Pending)
    }

    func prepare(_ record: InputRecord, nowMs: Int64, now: ContinuousClock.Instant) -> Prepared {
        let headers = PushHeaders(record.headers)
        let attempt = headers.attempt
        let fromRetryTopic = delay.retryTopic == record.source.topic
        // A job without one in its headers makes its default id (`<topic>-<partition>-<offset>`) when it
        // is read (``Job/messageId``), not here: with 100 000 jobs running, their strings were 8 MB.
        let headersMessageId = headers.messageIdFromHeaders(trustingCarried: fromRetryTopic)
        var messageId: String { headersMessageId ?? record.source.defaultMessageId }
        let origin = fromRetryTopic ? headers.carriedOrigin ?? record.source : record.source
        func immediate(_ result: BackgroundFetchResult, _ reason: ResultReason, _ detail: String, type: String?) -> Prepared {
            .result(ResultRecord(
                messageId: messageId, type: type, result: result, reason: reason, detail: detail, worker: nil,
                attempt: attempt, source: record.source, receivedAtMs: record.receivedAtMs, startedAtMs: nil, finishedAtMs: WallClock.nowMs(),
                durationMs: 0, key: record.key, apnsIdHeader: headers.apnsId, traceparentHeader: headers.traceparent,
                origin: origin == record.source ? nil : origin))
        }
        // Row 1 (the value's size) first, then a header over its bound (row 2, invalidPayload).
        if let problem = headers.problem, (record.value?.count ?? 0) <= validator.maxPayloadBytes {
            return immediate(.failed, .invalidPayload, problem, type: nil)
        }
        let (verdict, payloadType) = validator.check(value: record.value, apnsExpiration: headers.apnsExpiration, nowMs: nowMs)
        switch verdict {
        case .rejected(let result, let reason, let detail):
            return immediate(result, reason, detail, type: payloadType)
        case .accepted(let type):
            guard let worker = registry.route(type: type), let value = record.value else {
                let detail = type.map { "no worker is registered for type \"\($0)\" and there is no default worker" }
                    ?? "the payload has no string \"type\" and there is no default worker"
                return immediate(.noData, .noWorker, detail, type: type)
            }
            // The deadline is set when the worker starts; until then it reads "now".
            let job = Job(
                messageId: headersMessageId, type: type, value: value, key: record.key, headers: record.headers,
                source: record.source, traceparentHeader: headers.traceparent, attempt: attempt, notStartedAt: now, placeholderMs: nowMs)
            var dueNs: Int64?
            var holdsKey = false
            if let notBefore = headers.notBefore, notBefore.isAfter(nowMs) {
                let (waitNs, overflow) = (notBefore.unixMs - nowMs).multipliedReportingOverflow(by: 1_000_000)
                let nowNs = clockOrigin.duration(to: now).wholeNanoseconds
                dueNs = overflow ? .max : nowNs.addingReportingOverflow(waitNs).overflow ? .max : nowNs + waitNs
                // A retry read from the retry topic waits holding its key: the key's later records wait behind it.
                holdsKey = fromRetryTopic && attempt > 1 && record.key != nil
            }
            var collapseKey: CollapseKey?
            if collapse, let collapseId = headers.apnsCollapseId, let key = record.key {
                collapseKey = CollapseKey(key: key, collapseId: collapseId)
            }
            // Redriven and retried records (attempt > 1) are never deduped.
            var dedupeId: [UInt8]?
            if dedupes, attempt == 1, let apnsId = headers.apnsId, !apnsId.isEmpty { dedupeId = apnsId }
            let pending = Pending(Pending.Core(
                job: job, worker: worker, receivedAtMs: record.receivedAtMs, apnsIdHeader: headers.apnsId, collapseKey: collapseKey,
                dedupeId: dedupeId, dueNs: dueNs, notBeforeMs: headers.notBefore?.unixMs, holdsKey: holdsKey,
                origin: origin, apnsExpiration: headers.apnsExpiration), fromRetryTopic: fromRetryTopic)
            return .job(pending)
        }
    }

    /// The next attempt of `pending` when its run failed retryably and its policy has attempts left (and a
    /// retry topic is set), with `result` marked ``ResultRecord/willRetry``; `nil` when the result is final.
    /// A retry whose time would come after the record's `apns-expiration` is not made: the detail says so.
    func retryRequest(for pending: Pending, _ report: ExecutionReport, result: inout ResultRecord) -> RetryRequest? {
        guard delay.retryTopic != nil, report.outcome.result == .failed else { return nil }
        let policy = pending.worker.retry ?? delay.defaultPolicy
        let attempt = pending.job.attempt
        guard policy.retries(report.outcome, timedOut: report.timedOut, attempt: attempt) else { return nil }
        let wait = policy.delay(afterAttempt: attempt, random: random())
        let notBeforeMs = WallClock.nowMs() + wait.wholeMilliseconds
        if let header = pending.apnsExpiration, let expiration = APNsExpiration(header: header), expiration.hasPassed(atMs: notBeforeMs) {
            let note = "not retried: apns-expiration \(expiration.seconds) passes before the next attempt would run"
            result.detail = ResultRecord.truncated(result.detail.map { "\($0); \(note)" } ?? note, toBytes: ResultRecord.maxDetailBytes)
            return nil
        }
        result.willRetry = true
        return RetryRequest(runs: attempt, notBeforeMs: notBeforeMs, messageId: pending.job.messageId, origin: pending.origin)
    }

    /// The result of a job that did not run: a repeat of the `apns-id` of `first`.
    func duplicate(_ pending: Pending, of first: RecordSource, windowMs: Int64) -> ResultRecord {
        let id = pending.dedupeId.map(PayloadValidator.describeHeader) ?? "''"
        return notRun(pending, .duplicate, "apns-id \(id) repeats the record at \(first.topic)/\(first.partition) offset \(first.offset), taken within the dedupe window of \(windowMs) ms; only the first runs")
    }

    /// The result of a job that did not run: replaced, while it waited, by the newer `newer`.
    func collapsedResult(_ older: Pending, by newer: Pending) -> ResultRecord {
        let id = older.collapseKey.map { PayloadValidator.describeHeader($0.collapseId) } ?? "''"
        let source = newer.job.source
        return notRun(older, .collapsed, "collapsed by the newer record at \(source.topic)/\(source.partition) offset \(source.offset) with the same key and apns-collapse-id \(id) while this one waited; only the newest runs")
    }

    /// A `noData` result for a routed job whose worker never starts.
    func notRun(_ pending: Pending, _ reason: ResultReason, _ detail: String) -> ResultRecord {
        let job = pending.job
        return ResultRecord(
            messageId: job.messageId, type: job.type, result: .noData, reason: reason,
            detail: ResultRecord.truncated(detail, toBytes: ResultRecord.maxDetailBytes), worker: nil,
            attempt: job.attempt, source: job.source, receivedAtMs: pending.receivedAtMs, startedAtMs: nil,
            finishedAtMs: WallClock.nowMs(), durationMs: 0, key: job.key, apnsIdHeader: pending.apnsIdHeader,
            traceparentHeader: job.traceparentHeader, origin: pending.origin == job.source ? nil : pending.origin)
    }

    func result(of pending: Pending, _ report: ExecutionReport) -> ResultRecord {
        let job = pending.job
        return ResultRecord(
            messageId: job.messageId, type: job.type, result: report.outcome.result,
            reason: report.outcome.reason.map { ResultReason(ResultRecord.truncated($0.rawValue, toBytes: ResultRecord.maxReasonBytes)) },
            detail: report.outcome.detail.map { ResultRecord.truncated($0, toBytes: ResultRecord.maxDetailBytes) },
            worker: pending.worker.name, attempt: job.attempt, source: job.source,
            receivedAtMs: pending.receivedAtMs, startedAtMs: report.startedAtMs, finishedAtMs: report.finishedAtMs,
            durationMs: report.durationMs, key: job.key, apnsIdHeader: pending.apnsIdHeader, traceparentHeader: job.traceparentHeader,
            origin: pending.origin == job.source ? nil : pending.origin)
    }
}
