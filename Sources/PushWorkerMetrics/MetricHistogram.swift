import Synchronization

/// A histogram with an optional label set: per series, observations counted in buckets (upper bounds,
/// inclusive, plus `+Inf`), with their sum and count.
///
/// Every operation takes the histogram's one `Mutex`. NaN observations, calls with the wrong number of
/// label values and ``Series`` of another metric are ignored.
public final class MetricHistogram: Metric {
    /// The metric name.
    public let name: String
    /// The help text.
    public let help: String
    /// The label names, in order.
    public let labelNames: [String]
    /// The bucket upper bounds, strictly increasing, without `+Inf` (always added).
    public let buckets: [Double]
    private let cap: ResolvedCap?
    private let table = Mutex(SeriesTable<Value>())

    struct Value {
        /// Observations per bucket, not cumulative; the last one is `+Inf`.
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    init(name: String, help: String, labelNames: [String], buckets: [Double], cap: ResolvedCap?) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets
        self.cap = cap
    }

    /// The default buckets for durations in seconds: 5 ms to 60 s.
    public static let durationBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// Records `value` in the series with `labels` (default: no labels).
    public func observe(_ value: Double, labels: [String] = []) {
        guard !value.isNaN else { return }
        let bucket = bucketIndex(value)
        table.withLock { table in
            if let position = table.slot(labels, labelCount: labelNames.count, cap: cap, initial: Value(counts: Array(repeating: 0, count: buckets.count + 1))) {
                table.values[position].record(value, bucket: bucket)
            }
        }
    }

    /// The series with `labels`, created empty if new.
    public func series(_ labels: [String] = []) -> Series {
        let position = table.withLock { $0.slot(labels, labelCount: labelNames.count, cap: cap, initial: Value(counts: Array(repeating: 0, count: buckets.count + 1))) }
        return Series(owner: ObjectIdentifier(self), position: position ?? -1)
    }

    /// Records `value` in a series obtained from ``series(_:)``.
    public func observe(_ value: Double, series: Series) {
        guard !value.isNaN, series.owner == ObjectIdentifier(self), series.position >= 0 else { return }
        let bucket = bucketIndex(value)
        table.withLock { table in
            if series.position < table.values.count { table.values[series.position].record(value, bucket: bucket) }
        }
    }

    /// The number of observations of the series with exactly `labels`, or `nil` if it does not exist.
    public func count(labels: [String] = []) -> UInt64? {
        table.withLock { table in table.existing(labels).map { table.values[$0].count } }
    }

    /// The sum of the observations of the series with exactly `labels`, or `nil` if it does not exist.
    public func sum(labels: [String] = []) -> Double? {
        table.withLock { table in table.existing(labels).map { table.values[$0].sum } }
    }

    @inline(__always)
    private func bucketIndex(_ value: Double) -> Int {
        var index = 0
        while index < buckets.count && value > buckets[index] { index += 1 }
        return index
    }

    /// The current samples, series ordered by label values.
    public func snapshot() -> MetricSnapshot {
        let bounds = buckets.map(PrometheusText.formatNumber) + ["+Inf"]
        let samples = table.withLock { table in
            var samples: [MetricSnapshot.Sample] = []
            for position in table.sortedPositions() {
                let labels = zip(labelNames, table.labelValues[position]).map(MetricSnapshot.Label.init)
                let value = table.values[position]
                var cumulative: UInt64 = 0
                for (bucket, bound) in bounds.enumerated() {
                    cumulative += value.counts[bucket]
                    samples.append(.init(name: name + "_bucket", labels: labels + [.init("le", bound)], value: Double(cumulative)))
                }
                samples.append(.init(name: name + "_sum", labels: labels, value: value.sum))
                samples.append(.init(name: name + "_count", labels: labels, value: Double(value.count)))
            }
            return samples
        }
        return MetricSnapshot(name: name, help: help, type: .histogram, samples: samples)
    }
}

extension MetricHistogram.Value {
    @inline(__always)
    mutating func record(_ value: Double, bucket: Int) {
        counts[bucket] += 1
        sum += value
        count += 1
    }
}
