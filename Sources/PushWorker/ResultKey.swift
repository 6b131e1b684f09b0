import PushWorkerCore

/// The labels of one result in `pushworker_results_total`, before the `type` label is bounded.
struct ResultKey: Hashable, Sendable {
    var type: String?
    var result: BackgroundFetchResult
    var reason: ResultReason?

    init(_ result: ResultRecord) {
        type = result.type
        self.result = result.result
        reason = result.reason
    }

    init(type: String?, result: BackgroundFetchResult, reason: ResultReason?) {
        self.type = type
        self.result = result
        self.reason = reason
    }
}
