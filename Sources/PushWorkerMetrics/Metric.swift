/// A metric a ``MetricsRegistry`` can render.
public protocol Metric: AnyObject, Sendable {
    /// The metric name, e.g. `pushworker_records_consumed_total`.
    var name: String { get }
    /// The help text (one line).
    var help: String { get }
    /// The label names, in order.
    var labelNames: [String] { get }
    /// The current samples.
    func snapshot() -> MetricSnapshot
}
