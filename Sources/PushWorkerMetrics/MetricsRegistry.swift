import Synchronization

/// The metrics of one component, rendered together in the Prometheus text exposition format 0.0.4.
///
/// ```swift
/// let registry = MetricsRegistry()
/// let consumed = try registry.counter("app_records_consumed_total", help: "Records taken.")
/// consumed.increment(by: 10)
/// let text = registry.exposition()   // serve with MetricsRegistry.contentType
/// ```
///
/// Metrics are rendered in the order they were registered. Hooks added with ``onCollect(_:)`` run first,
/// on the rendering thread, to refresh gauges read from elsewhere (queue lengths, states).
public final class MetricsRegistry: Sendable {
    private struct State {
        var metrics: [any Metric] = []
        var names: Set<String> = []
        var hooks: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())
    /// Names starting with it are refused (``MetricsError/Code/reservedName``), or `nil`.
    public let reservedPrefix: String?

    /// The `Content-Type` of ``exposition()``: `text/plain; version=0.0.4; charset=utf-8`.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Creates an empty registry.
    /// - Parameter reservedPrefix: metric names starting with it are refused, e.g. `pushworker_` in the
    ///   registry of workers' own metrics (default: none).
    public init(reservedPrefix: String? = nil) {
        self.reservedPrefix = reservedPrefix
    }

    /// Registers a counter.
    /// - Parameters:
    ///   - name: the metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`; counters should end in `_total`).
    ///   - help: one line of help text.
    ///   - labels: the label names (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`), default none.
    ///   - cap: bounds the distinct values of one label (see ``LabelCap``), default none.
    /// - Throws: ``MetricsError`` for an invalid, reserved (``reservedPrefix``) or duplicate name, or a cap
    ///   naming an unknown label.
    public func counter(_ name: String, help: String, labels: [String] = [], cap: LabelCap? = nil) throws(MetricsError) -> MetricCounter {
        let resolved = try check(name: name, labels: labels, cap: cap)
        return try add(MetricCounter(name: name, help: help, labelNames: labels, cap: resolved))
    }

    /// Registers a gauge. Parameters and errors as for ``counter(_:help:labels:cap:)``.
    public func gauge(_ name: String, help: String, labels: [String] = [], cap: LabelCap? = nil) throws(MetricsError) -> MetricGauge {
        let resolved = try check(name: name, labels: labels, cap: cap)
        return try add(MetricGauge(name: name, help: help, labelNames: labels, cap: resolved))
    }

    /// Registers a histogram. Parameters and errors as for ``counter(_:help:labels:cap:)``, plus:
    /// - Parameter buckets: upper bounds, finite and strictly increasing (`+Inf` is always added); default
    ///   ``MetricHistogram/durationBuckets`` (seconds). The label `le` is reserved.
    /// - Throws: ``MetricsError/Code/invalidBuckets`` for empty, non-finite or unordered buckets.
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double] = MetricHistogram.durationBuckets, cap: LabelCap? = nil) throws(MetricsError) -> MetricHistogram {
        let resolved = try check(name: name, labels: labels, cap: cap)
        if labels.contains("le") { throw MetricsError(.invalidLabels, metric: name, "a histogram cannot have a label named 'le'") }
        guard !buckets.isEmpty, buckets.allSatisfy(\.isFinite), zip(buckets, buckets.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw MetricsError(.invalidBuckets, metric: name, "buckets must be finite and strictly increasing, got \(buckets)")
        }
        return try add(MetricHistogram(name: name, help: help, labelNames: labels, buckets: buckets, cap: resolved))
    }

    /// Adds a hook run before every ``exposition()`` / ``snapshot()``, on the calling thread, to refresh
    /// metrics read from elsewhere. It must not block.
    public func onCollect(_ hook: @escaping @Sendable () -> Void) {
        state.withLock { $0.hooks.append(hook) }
    }

    /// Runs the hooks and returns every metric's samples, in registration order.
    public func snapshot() -> [MetricSnapshot] {
        let (metrics, hooks) = state.withLock { ($0.metrics, $0.hooks) }
        hooks.forEach { $0() }
        return metrics.map { $0.snapshot() }
    }

    /// The text exposition (format 0.0.4) of every metric; metrics without series are left out.
    public func exposition() -> String {
        PrometheusText.render(snapshot())
    }

    private func add<M: Metric>(_ metric: M) throws(MetricsError) -> M {
        let added = state.withLock { state -> Bool in
            guard state.names.insert(metric.name).inserted else { return false }
            state.metrics.append(metric)
            return true
        }
        if !added { throw MetricsError(.duplicateName, metric: metric.name, "is already registered") }
        return metric
    }

    private func check(name: String, labels: [String], cap: LabelCap?) throws(MetricsError) -> ResolvedCap? {
        guard PrometheusText.isValidMetricName(name) else {
            throw MetricsError(.invalidName, metric: name, "is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        }
        if let reservedPrefix, name.hasPrefix(reservedPrefix) {
            throw MetricsError(.reservedName, metric: name, "names starting '\(reservedPrefix)' are reserved for the service's own metrics; choose a prefix of your own (e.g. your worker's name)")
        }
        for label in labels where !PrometheusText.isValidLabelName(label) {
            throw MetricsError(.invalidName, metric: name, "label '\(label)' is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")
        }
        if Set(labels).count != labels.count { throw MetricsError(.invalidLabels, metric: name, "a label is named twice in \(labels)") }
        return try cap.map { cap throws(MetricsError) in try ResolvedCap(cap, labelNames: labels, metric: name) }
    }
}
