import Foundation
import PushWorkerCore

extension ContentUpdateWorker {
    /// The worker's settings: the `workerSettings."content-update"` section of the config file.
    /// ```json5
    /// workerSettings: {
    ///   "content-update": { baseURL: "https://cdn.example.com/content", directory: "/var/lib/content", requestTimeout: 5000 },
    /// }
    /// ```
    /// Decoded strictly (an unknown key, a missing `baseURL` or a value of the wrong type stops startup with
    /// the key's path); a `baseURL` that is not http(s) with a host is refused with its path too.
    public struct Settings: Decodable, Sendable, Equatable {
        /// Where content lives: an http or https URL with a host, e.g. `https://cdn.example.com/content`.
        public var baseURL: URL
        /// Where new content is written, one file per `contentId` (``ContentDirectory``), or `nil` (default):
        /// not written.
        public var directory: String?
        /// The longest a request may take, in the file in milliseconds (default 10 000); capped by the
        /// job's remaining budget.
        public var requestTimeout: Duration?

        /// Creates settings.
        public init(baseURL: URL, directory: String? = nil, requestTimeout: Duration? = nil) {
            self.baseURL = baseURL
            self.directory = directory
            self.requestTimeout = requestTimeout
        }

        enum CodingKeys: String, CodingKey { case baseURL, directory, requestTimeout }

        /// Decodes the section and checks `baseURL`.
        /// - Throws: `DecodingError.dataCorrupted` at `baseURL` when it is not an http(s) URL with a host.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            baseURL = try container.decode(URL.self, forKey: .baseURL)
            directory = try container.decodeIfPresent(String.self, forKey: .directory)
            requestTimeout = try container.decodeIfPresent(Duration.self, forKey: .requestTimeout)
            guard let scheme = baseURL.scheme?.lowercased(), scheme == "http" || scheme == "https", baseURL.host != nil else {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: container.codingPath + [CodingKeys.baseURL],
                    debugDescription: "must be an http or https URL with a host, got '\(baseURL.absoluteString)'"))
            }
        }
    }

    /// Registers the worker's metric in `metrics`: `content_server_responses_total{status}`, the content
    /// server's answers by `status` (`200`, `304`, `404`, `other` for any other status, `error` for no HTTP
    /// answer), each series starting at 0. Pass it to ``init(settings:responses:)``.
    /// - Throws: `MetricsError` when the name is already registered.
    public static func makeResponsesCounter(in metrics: MetricsRegistry) throws -> MetricCounter {
        let counter = try metrics.counter(
            "content_server_responses_total",
            help: "Answers of the content server to the content-update worker, by status (200, 304, 404, other; error: no HTTP answer).",
            labels: ["status"])
        for status in ["200", "304", "404", "other", "error"] { counter.increment(by: 0, labels: [status]) }
        return counter
    }

    /// Creates the worker from its settings, writing new content to `settings.directory` when set.
    /// - Parameter responses: counts the content server's answers (``makeResponsesCounter(in:)``), or `nil`.
    public init(settings: Settings, responses: MetricCounter?) {
        let directory = settings.directory.map { ContentDirectory(URL(fileURLWithPath: $0, isDirectory: true)) }
        self.init(baseURL: settings.baseURL, requestTimeout: settings.requestTimeout ?? .seconds(10), responses: responses) { contentId, body in
            try directory?.write(body, for: contentId)
        }
    }
}

extension ContentUpdateWorker: ConfigurableWorker {
    /// Creates the worker from its settings, without a metric (``init(settings:responses:)``).
    public init(settings: Settings) {
        self.init(settings: settings, responses: nil)
    }
}
