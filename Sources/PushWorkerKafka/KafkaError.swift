import CRdKafka

/// An error from librdkafka or from this wrapper, with the librdkafka error name and a readable message.
///
/// `code` says what kind of failure it is; `rdKafkaErrorName` is librdkafka's own name
/// (`rd_kafka_err2name`, e.g. `_QUEUE_FULL`, `UNKNOWN_TOPIC_OR_PART`) when librdkafka produced it.
public struct KafkaError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of a ``KafkaError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A configuration property was rejected by librdkafka (`rd_kafka_conf_set`).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A client handle could not be created (`rd_kafka_new`).
        public static let clientCreation = Code("clientCreation")
        /// The local producer queue is full (`RD_KAFKA_RESP_ERR__QUEUE_FULL`,
        /// bounded by `queue.buffering.max.messages` / `queue.buffering.max.kbytes`).
        public static let queueFull = Code("queueFull")
        /// A message could not be delivered (delivery report error, after librdkafka's own retries).
        public static let deliveryFailed = Code("deliveryFailed")
        /// A consumer operation failed (subscribe, assign, store, commit, close, pause, resume).
        public static let consumer = Code("consumer")
        /// A mock cluster operation failed.
        public static let mockCluster = Code("mockCluster")
        /// An admin or metadata request failed.
        public static let admin = Code("admin")
        /// A fatal client error (`rd_kafka_fatal_error`): the client must be recreated.
        public static let fatal = Code("fatal")
        /// The client is closed.
        public static let closed = Code("closed")
        /// A wait ran out of time.
        public static let timedOut = Code("timedOut")
        /// No broker of `bootstrap.servers` answered (``KafkaBrokerProbe``): every connection failed
        /// (librdkafka's `ALL_BROKERS_DOWN`), or none answered in time.
        public static let noBroker = Code("noBroker")
    }

    /// The kind of failure.
    public var code: Code
    /// A readable message for logs and for users.
    public var message: String
    /// librdkafka's error code (`rd_kafka_resp_err_t` raw value), 0 if the error did not come from librdkafka.
    public var rdKafkaError: Int32
    /// Whether librdkafka marked the error retriable (`rd_kafka_error_is_retriable` of the
    /// `rd_kafka_error_t` that `rd_kafka_produceva` returned), or `nil` when it came as a bare
    /// `rd_kafka_resp_err_t` (delivery reports, other calls) or not from librdkafka.
    public var isRetriable: Bool?

    /// Creates an error.
    /// - Parameter isRetriable: librdkafka's `rd_kafka_error_is_retriable`, when the error came with one.
    public init(_ code: Code, _ message: String, rdKafkaError: Int32 = 0, isRetriable: Bool? = nil) {
        self.code = code
        self.message = message
        self.rdKafkaError = rdKafkaError
        self.isRetriable = isRetriable
    }

    init(_ code: Code, _ context: String, _ err: rd_kafka_resp_err_t) {
        let text = String(cString: rd_kafka_err2str(err))  // NUL-safe: librdkafka's own text (names, errors, versions)
        let name = String(cString: rd_kafka_err2name(err))  // NUL-safe: librdkafka's own text (names, errors, versions)
        self.init(code, "\(context): \(text) (\(name))", rdKafkaError: err.rawValue)
    }

    /// librdkafka's name for ``rdKafkaError`` (`rd_kafka_err2name`), or `nil` when it is 0.
    public var rdKafkaErrorName: String? {
        rdKafkaError == 0 ? nil : String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: rdKafkaError)))  // NUL-safe: librdkafka's own text (names, errors, versions)
    }

    public var description: String { message }
}
