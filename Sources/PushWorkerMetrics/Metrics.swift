import Synchronization

/// The Prometheus metric types this module exposes (text format `# TYPE`).
public enum MetricType: String, Sendable {
    /// A value that only goes up (and resets when the process restarts).
    case counter
    /// A value that goes up and down.
    case gauge
    /// Observations counted in cumulative buckets, with their sum and count.
    case histogram
}

/// What one metric holds at one moment: its samples as the text format writes them.
public struct MetricSnapshot: Sendable, Equatable {
    /// One line of the exposition: a sample name (the metric name, or it with `_bucket`, `_sum`, `_count`),
    /// its labels in order, and its value.
    public struct Sample: Sendable, Equatable {
        /// The sample name.
        public var name: String
        /// Label names and values, in order.
        public var labels: [Label]
        /// The value.
        public var value: Double

        /// Creates a sample.
        public init(name: String, labels: [Label], value: Double) {
            self.name = name
            self.labels = labels
            self.value = value
        }
    }

    /// A label name and value.
    public struct Label: Sendable, Equatable {
        /// The label name.
        public var name: String
        /// The label value (any UTF-8 text; escaped when rendered).
        public var value: String

        /// Creates a label.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The metric name.
    public var name: String
    /// The help text.
    public var help: String
    /// The type.
    public var type: MetricType
    /// The samples, series ordered by label values.
    public var samples: [Sample]

    /// Creates a snapshot.
    public init(name: String, help: String, type: MetricType, samples: [Sample]) {
        self.name = name
        self.help = help
        self.type = type
        self.samples = samples
    }
}

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

/// A counter with an optional label set: a value per series that only goes up.
///
/// Every operation takes the counter's one `Mutex`; batch recording (``increment(_:)-([Series])``) takes it
/// once per batch. Recording never fails: a call with the wrong number of label values, a negative, NaN or
/// infinite amount, or a ``Series`` of another metric is ignored.
public final class Counter: Metric {
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

/// A gauge with an optional label set: a value per series that can go up and down, or be absent.
///
/// Every operation takes the gauge's one `Mutex`. A call with the wrong number of label values or a
/// ``Series`` of another metric is ignored.
public final class Gauge: Metric {
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

/// A histogram with an optional label set: per series, observations counted in buckets (upper bounds,
/// inclusive, plus `+Inf`), with their sum and count.
///
/// Every operation takes the histogram's one `Mutex`. NaN observations, calls with the wrong number of
/// label values and ``Series`` of another metric are ignored.
public final class Histogram: Metric {
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

extension Histogram.Value {
    @inline(__always)
    mutating func record(_ value: Double, bucket: Int) {
        counts[bucket] += 1
        sum += value
        count += 1
    }
}
