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
