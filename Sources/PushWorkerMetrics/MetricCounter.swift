import Synchronization

/// A counter with an optional label set: a value per series that only goes up.
///
/// Every operation takes the counter's one `Mutex`; batch recording (``increment(_:)-([Series])``) takes it
/// once per batch. Recording never fails: a call with the wrong number of label values, a negative, NaN or
/// infinite amount, or a ``Series`` of another metric is ignored.
public final class MetricCounter: Metric {
    /// The metric name.
    public let name: String
    /// The help text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    private let cap: ResolvedCap?
    private let table = Mutex(SeriesTable<Double>())

    init(name: String, help: String, labelNames: [String], cap: ResolvedCap?) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.cap = cap
    }

    /// Adds `amount` (default 1, must be ≥ 0) to the series with `labels` (default: no labels), creating it.
    public func increment(by amount: Double = 1, labels: [String] = []) {
        guard amount >= 0, amount.isFinite else { return }
        table.withLock { table in
            if let position = table.slot(labels, labelCount: labelNames.count, cap: cap, initial: 0) {
                table.values[position] += amount
            }
        }
    }

    /// The series with `labels`, created at 0 if new (so it is exported before its first event). Apply the
    /// label cap, if any: the handle may be the cap's overflow series.
    public func series(_ labels: [String] = []) -> Series {
        let position = table.withLock { $0.slot(labels, labelCount: labelNames.count, cap: cap, initial: 0) }
        return Series(owner: ObjectIdentifier(self), position: position ?? -1)
    }

    /// Adds `amount` (default 1, must be ≥ 0) to a series obtained from ``series(_:)``.
    public func increment(_ series: Series, by amount: Double = 1) {
        guard amount >= 0, amount.isFinite, series.owner == ObjectIdentifier(self), series.position >= 0 else { return }
        table.withLock { table in
            if series.position < table.values.count { table.values[series.position] += amount }
        }
    }

    /// Adds 1 to each series in `batch` (a series listed twice gets 2), under one lock.
    public func increment(_ batch: [Series]) {
        guard !batch.isEmpty else { return }
        let owner = ObjectIdentifier(self)
        table.withLock { table in
            for series in batch where series.owner == owner && series.position >= 0 && series.position < table.values.count {
                table.values[series.position] += 1
            }
        }
    }

    /// The value of the series with exactly `labels`, or `nil` if it does not exist.
    public func value(labels: [String] = []) -> Double? {
        table.withLock { table in table.existing(labels).map { table.values[$0] } }
    }

    /// The current samples, series ordered by label values.
    public func snapshot() -> MetricSnapshot {
        let samples = table.withLock { table in
            table.sortedPositions().map { position in
                MetricSnapshot.Sample(name: name, labels: zip(labelNames, table.labelValues[position]).map(MetricSnapshot.Label.init), value: table.values[position])
            }
        }
        return MetricSnapshot(name: name, help: help, type: .counter, samples: samples)
    }
}
