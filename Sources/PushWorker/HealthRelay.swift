import Synchronization

/// Lets the HTTP server, started before the pipeline, reach the pipeline's health checks.
final class HealthRelay: Sendable {
    private let health = Mutex<ServiceHealth?>(nil)
    /// The checks, or `nil` while the pipeline is being built.
    var current: ServiceHealth? {
        get { health.withLock { $0 } }
        set { health.withLock { $0 = newValue } }
    }
}
