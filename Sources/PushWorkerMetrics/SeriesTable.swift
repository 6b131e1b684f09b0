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
