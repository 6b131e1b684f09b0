/// A metric that cannot be defined, naming the metric or label at fault.
///
/// Thrown when a metric is registered (``MetricsRegistry``); recording values never throws.
public struct MetricsError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of a ``MetricsError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// A metric name does not match `[a-zA-Z_:][a-zA-Z0-9_:]*`, or a label name does not match
        /// `[a-zA-Z_][a-zA-Z0-9_]*` or starts with `__` (Prometheus data model).
        public static let invalidName = Code("invalidName")
        /// The name starts with the registry's reserved prefix (``MetricsRegistry/reservedPrefix``): in the
        /// registry of workers' own metrics, `pushworker_` is the service's.
        public static let reservedName = Code("reservedName")
        /// A metric of this name is already registered.
        public static let duplicateName = Code("duplicateName")
        /// Histogram buckets are empty, not finite or not strictly increasing.
        public static let invalidBuckets = Code("invalidBuckets")
        /// A label is named twice, a histogram uses the reserved label `le`, or a ``LabelCap`` names a label
        /// the metric does not have.
        public static let invalidLabels = Code("invalidLabels")
    }

    /// The kind of failure.
    public var code: Code
    /// The metric name at fault.
    public var metric: String
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, metric: String, _ message: String) {
        self.code = code
        self.metric = metric
        self.message = message
    }

    public var description: String { "metric '\(metric)': \(message)" }
}
