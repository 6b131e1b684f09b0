import PushWorkerCore

extension ServiceConfiguration {
    /// pushworker's own reasons of `failed` results (contract section 2).
    static let failedReasons = [ResultReason.payloadTooLarge, .invalidPayload, .workerError, .timeout, .workerCrashed].map(\.rawValue)
    /// Result names and pushworker's `noData` reasons: never the reason of a `failed` result.
    static let neverFailedReasons: Set<String> = Set(
        [ResultReason.notSilent, .expired, .noWorker, .collapsed, .duplicate].map(\.rawValue) + BackgroundFetchResult.allCases.map(\.rawValue))
}
