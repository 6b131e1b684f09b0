/// Bounds the distinct values one label takes, so that free text (worker-defined reasons, values read
/// from input) cannot create an unbounded number of series.
///
/// When a new series would give `label` a value beyond the first `limit` distinct ones (counted per value
/// of `per`, or over the whole metric when `per` is `nil`), the series gets `overflowValue` instead. The
/// overflow value itself is always accepted and does not count towards the limit.
public struct LabelCap: Sendable, Equatable {
    /// The label whose values are bounded, e.g. `reason`.
    public var label: String
    /// The label whose values each get their own limit, e.g. `type`, or `nil` for one limit.
    public var per: String?
    /// The most distinct values kept (per value of ``per``), at least 1.
    public var limit: Int
    /// The value used beyond the limit. Default `(other)`.
    public var overflowValue: String

    /// Creates a cap.
    /// - Parameters:
    ///   - label: the bounded label.
    ///   - per: the label whose values each get their own limit, or `nil` for one limit over the metric.
    ///   - limit: the most distinct values kept (values below 1 count as 1).
    ///   - overflowValue: the value used beyond the limit (default `(other)`).
    public init(label: String, per: String? = nil, limit: Int, overflowValue: String = "(other)") {
        self.label = label
        self.per = per
        self.limit = max(1, limit)
        self.overflowValue = overflowValue
    }
}

/// A ``LabelCap`` with its labels resolved to positions in the metric's label names.
struct ResolvedCap: Sendable {
    var labelIndex: Int
    var perIndex: Int?
    var limit: Int
    var overflowValue: String

    init(_ cap: LabelCap, labelNames: [String], metric: String) throws(MetricsError) {
        guard let labelIndex = labelNames.firstIndex(of: cap.label) else {
            throw MetricsError(.invalidLabels, metric: metric, "the label cap names '\(cap.label)', which is not one of the labels \(labelNames)")
        }
        var perIndex: Int?
        if let per = cap.per {
            guard let index = labelNames.firstIndex(of: per), index != labelIndex else {
                throw MetricsError(.invalidLabels, metric: metric, "the label cap's 'per' names '\(per)', which is not another of the labels \(labelNames)")
            }
            perIndex = index
        }
        self.labelIndex = labelIndex
        self.perIndex = perIndex
        self.limit = cap.limit
        self.overflowValue = cap.overflowValue
    }
}

/// The series of one metric, by label values (in the order of the metric's label names). Not thread-safe:
/// each metric keeps its table in one `Mutex`.
struct SeriesTable<Value> {
    private(set) var labelValues: [[String]] = []
    var values: [Value] = []
    private var index: [[String]: Int] = [:]
    /// Distinct values of the capped label seen, per value of the cap's `per` label.
    private var distinct: [String: Set<String>] = [:]

    /// The position of the series with `labels`, created with `initial` if new; `nil` when `labels` has
    /// the wrong number of values (the call is then ignored).
    mutating func slot(_ labels: [String], labelCount: Int, cap: ResolvedCap?, initial: @autoclosure () -> Value) -> Int? {
        if let found = index[labels] { return found }
        guard labels.count == labelCount else { return nil }
        var labels = labels
        if let cap {
            let group = cap.perIndex.map { labels[$0] } ?? ""
            let value = labels[cap.labelIndex]
            if value != cap.overflowValue && distinct[group]?.contains(value) != true {
                if distinct[group, default: []].count >= cap.limit {
                    labels[cap.labelIndex] = cap.overflowValue
                    if let found = index[labels] { return found }
                } else {
                    distinct[group, default: []].insert(value)
                }
            }
        }
        let position = values.count
        index[labels] = position
        labelValues.append(labels)
        values.append(initial())
        return position
    }

    /// The position of the series with exactly `labels`, if it exists.
    func existing(_ labels: [String]) -> Int? { index[labels] }

    /// Series positions ordered by label values, for a stable exposition.
    func sortedPositions() -> [Int] {
        labelValues.indices.sorted { labelValues[$0].lexicographicallyPrecedes(labelValues[$1]) }
    }
}

/// A handle on one series of a metric, for recording on hot paths without looking the labels up again.
///
/// Obtained from the metric's `series(_:)`; valid only with that metric (with another one it is ignored).
public struct Series: Sendable, Hashable {
    let owner: ObjectIdentifier
    let position: Int
}
