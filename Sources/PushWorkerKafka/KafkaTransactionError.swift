import CRdKafka

/// A failed transactional call (`rd_kafka_init_transactions`, `rd_kafka_begin_transaction`,
/// `rd_kafka_send_offsets_to_transaction`, `rd_kafka_commit_transaction`, `rd_kafka_abort_transaction`),
/// classified as librdkafka classifies its `rd_kafka_error_t`: what the caller must do next is ``code``.
///
/// librdkafka's transactional error handling (rdkafka.h, "Transactional producer API"):
/// - ``Code/retriable`` (`rd_kafka_error_is_retriable`): call the same function again with the same
///   arguments (e.g. `_TIMED_OUT`: the outcome is not yet known).
/// - ``Code/abortable`` (`rd_kafka_error_txn_requires_abort`): abort the transaction
///   (`rd_kafka_abort_transaction`), rewind the consumer to the last committed offsets and process again.
/// - ``Code/fatal`` (`rd_kafka_error_is_fatal`): the producer cannot go on (e.g. `_FENCED`: another
///   producer with the same `transactional.id` took over); it must be destroyed.
/// - ``Code/failed``: none of these (e.g. `_STATE`, `_NOT_CONFIGURED`, `_INVALID_ARG`): a programming or
///   configuration error.
public struct KafkaTransactionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The class of a ``KafkaTransactionError``: what the caller does next.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// `retriable`, `abortable`, `fatal` or `failed`.
        public var description: String { name }

        /// Call the same function again, with the same arguments (`rd_kafka_error_is_retriable`).
        public static let retriable = Code("retriable")
        /// Abort the transaction, rewind the input, process again (`rd_kafka_error_txn_requires_abort`).
        public static let abortable = Code("abortable")
        /// The producer can never go on; destroy it (`rd_kafka_error_is_fatal`).
        public static let fatal = Code("fatal")
        /// Neither retriable, abortable nor fatal: a misuse or a configuration error.
        public static let failed = Code("failed")
    }

    /// The class of the error.
    public var code: Code
    /// The librdkafka function that failed, e.g. `rd_kafka_commit_transaction`.
    public var operation: String
    /// A readable message: the operation and librdkafka's text and error name.
    public var message: String
    /// librdkafka's error code (`rd_kafka_error_code`, a `rd_kafka_resp_err_t` raw value).
    public var rdKafkaError: Int32
    /// librdkafka's name of the error (`rd_kafka_error_name`, e.g. `_FENCED`, `TOPIC_AUTHORIZATION_FAILED`).
    public var rdKafkaErrorName: String

    /// Creates an error (for tests and for failures found by the wrapper itself).
    public init(_ code: Code, operation: String, message: String, rdKafkaError: Int32 = 0, rdKafkaErrorName: String = "") {
        self.code = code
        self.operation = operation
        self.message = message
        self.rdKafkaError = rdKafkaError
        self.rdKafkaErrorName = rdKafkaErrorName
    }

    /// Reads and destroys `error` (`rd_kafka_error_destroy`), returned by `operation`.
    init(consuming error: OpaquePointer, operation: String) {
        let code: Code
        // Fatal first: a fatal error may also say it requires an abort; it can never be aborted.
        if rd_kafka_error_is_fatal(error) != 0 {
            code = .fatal
        } else if rd_kafka_error_txn_requires_abort(error) != 0 {
            code = .abortable
        } else if rd_kafka_error_is_retriable(error) != 0 {
            code = .retriable
        } else {
            code = .failed
        }
        let name = String(cString: rd_kafka_error_name(error))  // NUL-safe: librdkafka's own text (names, errors, versions)
        let text = String(cString: rd_kafka_error_string(error))  // NUL-safe: librdkafka's own text (names, errors, versions)
        let raw = rd_kafka_error_code(error).rawValue
        rd_kafka_error_destroy(error)
        self.init(code, operation: operation, message: "\(operation) failed (\(code)): \(text) (\(name))", rdKafkaError: raw, rdKafkaErrorName: name)
    }

    /// Throws the error `body` returns (a `rd_kafka_error_t *`, destroyed here), if any.
    static func check(_ operation: String, _ body: () -> OpaquePointer?) throws(KafkaTransactionError) {
        if let error = body() { throw KafkaTransactionError(consuming: error, operation: operation) }
    }

    public var description: String { message }
}
