/// Quantiles estimated from histogram buckets, as Prometheus's `histogram_quantile` does: the bucket that
/// holds the rank, then linear interpolation between its bounds (the first bucket starts at 0; a rank in
/// the `+Inf` bucket gives the largest finite bound).
enum HistogramQuantile {
    /// The `q` quantile (0 … 1) of observations counted in `buckets`: upper bounds with *cumulative*
    /// counts, ascending, the last one `+Inf`. `nil` when nothing was observed.
    static func estimate(_ q: Double, buckets: [(upperBound: Double, cumulative: Double)]) -> Double? {
        guard let total = buckets.last?.cumulative, total > 0 else { return nil }
        let rank = min(max(q, 0), 1) * total
        var lowerBound = 0.0
        var below = 0.0
        for bucket in buckets {
            if bucket.cumulative >= rank && bucket.cumulative > below {
                if bucket.upperBound.isInfinite { return lowerBound }
                let fraction = (rank - below) / (bucket.cumulative - below)
                return lowerBound + (bucket.upperBound - lowerBound) * fraction
            }
            if !bucket.upperBound.isInfinite { lowerBound = bucket.upperBound }
            below = bucket.cumulative
        }
        return lowerBound
    }
}
