import Synchronization

/// A gauge with an optional label set: a value per series that can go up and down, or be absent.
///
/// Every operation takes the gauge's one `Mutex`. A call with the wrong number of label values or a
/// ``Series`` of another metric is ignored.
public final class MetricGauge: Metric {
    /// The metric name.
    public let name: String
    /// The help text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    private let cap: ResolvedCap?
    /// `nil`: the series is absent (not exported).
    private let table = Mutex(SeriesTable<Double?>())

    init(name: String, help: String, labelNames: [String], cap: ResolvedCap?) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.cap = cap
    }

    /// Sets the series with `labels` (default: no labels) to `value`.
    public func set(_ value: Double, labels: [String] = []) {
        table.withLock { table in
            if let position = table.slot(labels, labelCount: labelNames.count, cap: cap, initial: nil) { table.values[position] = value }
        }
    }

    /// Adds `delta` (may be negative) to the series with `labels`; an absent series starts at 0.
    public func add(_ delta: Double, labels: [String] = []) {
        table.withLock { table in
            if let position = table.slot(labels, labelCount: labelNames.count, cap: cap, initial: nil) {
                table.values[position] = (table.values[position] ?? 0) + delta
            }
        }
    }

    /// Replaces every series at once: the ones in `values` are set, all others become absent.
    public func replaceAll(_ values: [(labels: [String], value: Double)]) {
        table.withLock { table in
            for position in table.values.indices { table.values[position] = nil }
            for (labels, value) in values {
                if let position = table.slot(labels, labelCount: labelNames.count, cap: cap, initial: nil) { table.values[position] = value }
            }
        }
    }

    /// Makes the series with `labels` absent (it is no longer exported).
    public func remove(labels: [String] = []) {
        table.withLock { table in
            if let position = table.existing(labels) { table.values[position] = nil }
        }
    }

    /// The value of the series with exactly `labels`, or `nil` if it is absent.
    public func value(labels: [String] = []) -> Double? {
        table.withLock { table in table.existing(labels).flatMap { table.values[$0] } }
    }

    /// The current samples, series ordered by label values.
    public func snapshot() -> MetricSnapshot {
        let samples = table.withLock { table in
            table.sortedPositions().compactMap { position -> MetricSnapshot.Sample? in
                guard let value = table.values[position] else { return nil }
                return MetricSnapshot.Sample(name: name, labels: zip(labelNames, table.labelValues[position]).map(MetricSnapshot.Label.init), value: value)
            }
        }
        return MetricSnapshot(name: name, help: help, type: .gauge, samples: samples)
    }
}
