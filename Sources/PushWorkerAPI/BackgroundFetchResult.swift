/// The outcome of a job, named after iOS's `UIBackgroundFetchResult`.
public enum BackgroundFetchResult: String, Sendable, Hashable, CaseIterable, Codable {
    /// New data was fetched or work was done.
    case newData
    /// There was nothing to do.
    case noData
    /// The job failed.
    case failed
}
