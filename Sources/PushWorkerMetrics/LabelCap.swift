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
