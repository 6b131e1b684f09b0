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
