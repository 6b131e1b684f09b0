import PushWorkerAPI

extension JobDispatcher {
    /// The message id (the `apns-id` header, or `<topic>-<partition>-<offset>`) and the payload `type` of
    /// `record`, as its result would name them; for logs about a record that has not run.
    public func identify(_ record: InputRecord) -> (messageId: String, type: String?) {
        let headers = PushHeaders(record.headers)
        let fromRetryTopic = delay.retryTopic == record.source.topic
        let messageId = headers.messageIdFromHeaders(trustingCarried: fromRetryTopic) ?? record.source.defaultMessageId
        let (_, type) = validator.check(value: record.value, apnsExpiration: nil, nowMs: 0)
        return (messageId, type)
    }

    /// Answers records the crash guard does not run again: a pushworker process died with each running
    /// `deaths` times (its limit). Each gets `failed` / ``ResultReason/workerCrashed``, not retried, with
    /// a detail that says how many times; it is dead-lettered like any `failed` result, and its offset is
    /// committed once the result is acknowledged.
    public func answerCrashed(_ records: [(record: InputRecord, deaths: Int)]) {
        guard !records.isEmpty else { return }
        let outputs = records.map { record, deaths -> DispatcherOutput in
            let headers = PushHeaders(record.headers)
            let fromRetryTopic = delay.retryTopic == record.source.topic
            let messageId = headers.messageIdFromHeaders(trustingCarried: fromRetryTopic) ?? record.source.defaultMessageId
            let origin = fromRetryTopic ? headers.carriedOrigin ?? record.source : record.source
            let (_, type) = validator.check(value: record.value, apnsExpiration: nil, nowMs: 0)
            let result = ResultRecord(
                messageId: messageId, type: type, result: .failed, reason: .workerCrashed,
                detail: "a pushworker process died \(deaths) times while this record ran; it is not run again",
                worker: registry.route(type: type)?.name, attempt: headers.attempt, source: record.source,
                receivedAtMs: record.receivedAtMs, startedAtMs: nil, finishedAtMs: WallClock.nowMs(), durationMs: 0,
                key: record.key, apnsIdHeader: headers.apnsId, traceparentHeader: headers.traceparent,
                origin: origin == record.source ? nil : origin)
            return .result(result, record, retry: nil)
        }
        onOutputs(outputs)
    }
}
