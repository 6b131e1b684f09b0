/// The Prometheus metric types this module exposes (text format `# TYPE`).
public enum MetricType: String, Sendable {
    /// A value that only goes up (and resets when the process restarts).
    case counter
    /// A value that goes up and down.
    case gauge
    /// Observations counted in cumulative buckets, with their sum and count.
    case histogram
}
