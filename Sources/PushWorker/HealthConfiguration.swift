/// Thresholds of the health checks (configuration key `health`).
public struct HealthConfiguration: Sendable, Equatable {
    /// How long the oldest result (or dead letter) may wait for the broker's acknowledgement before
    /// `/readyz` fails its `results` check, e.g. while the results topic refuses writes. Default 60 s
    /// (`health.stuckResultsAfterMs: 60000`, in milliseconds); at least 1 ms in the file. Only compared with
    /// the oldest result's age, so any Swift value is safe: zero or less fails the check while any result
    /// waits, a huge one never does.
    public var stuckResultsAfter: Duration = .seconds(60)

    /// The defaults: results stuck after 60 s.
    public init() {}

    /// Creates a configuration.
    public init(stuckResultsAfter: Duration) {
        self.stuckResultsAfter = stuckResultsAfter
    }
}
