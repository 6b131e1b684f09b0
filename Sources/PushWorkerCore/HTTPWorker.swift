import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built-in `http` worker (contract section 6): POSTs the record value to a fixed URL.
///
/// - Request: `POST` of the whole record value with `Content-Type: application/json`, the `apns-id`
///   (message id), `traceparent` and `pushworker-attempt` (``attemptHeader``: 1 for the first run)
///   headers, plus the configured static headers. The payload never
///   chooses the URL.
/// - Refusal: `apns-id` (``Job/messageId``) and `traceparent` come from the record, so they are checked
///   before they become request headers: a value holding a control character (CR, LF and NUL included;
///   tab is allowed) or DEL, or a `traceparent` that is not UTF-8, is never sent. The job is then `failed`
///   / `invalidPayload` with a detail naming the header, and no request is made (``headerProblem(for:)``).
/// - Timeout: the smaller of ``requestTimeout`` and the time left in the budget; the request is also
///   cancelled with the job at the deadline.
/// - Outcome: 204 = `noData`; other 2xx = `newData`, unless the body is a JSON object with a `result`
///   (`newData`, `noData`, `failed`), optional `reason` and optional `retryable` (true marks a `failed`
///   retryable, ``RetryPolicy``), which are used; 429 (Too Many Requests), 502, 503 and 504 (the endpoint
///   or a gateway before it is unavailable for now) = `failed` / `workerError` retryable; other statuses =
///   `failed` / `workerError` with `HTTP status N` as detail; transport errors (no HTTP status: refused,
///   reset, unreachable) = `failed` / `workerError` retryable with the error as detail.
/// - Connections are reused across jobs (one `URLSession` per worker).
public struct HTTPWorker: Worker {
    /// The URL every job is POSTed to.
    public let url: URL
    /// Static headers sent with every request (values may be secrets: never logged).
    public let headers: [String: String]
    /// The longest a request may take (default 30 s); the budget's remaining time caps it further.
    public let requestTimeout: Duration
    /// The most response body bytes read for a JSON outcome (default 64 KiB); larger bodies are not parsed.
    public static let maxParsedBodyBytes = 65_536
    private let session: URLSession

    /// Creates an http worker.
    /// - Parameters:
    ///   - url: the endpoint (`http` or `https`).
    ///   - headers: static headers (e.g. `Authorization`).
    ///   - requestTimeout: its own request timeout (default 30 s).
    public init(url: URL, headers: [String: String] = [:], requestTimeout: Duration = .seconds(30)) {
        self.url = url
        self.headers = headers
        self.requestTimeout = requestTimeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.session = URLSession(configuration: configuration)
    }

    /// The request header with the job's run, 1 for the first (``Job/attempt``): `pushworker-attempt`.
    public static let attemptHeader = "pushworker-attempt"

    /// The worker's failure before an HTTP status arrived: a ``RetryableError`` (a refused or reset connection usually passes).
    public struct TransportError: RetryableError, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// Why `job`'s `apns-id` or `traceparent` cannot be sent as an HTTP request header, or `nil`. RFC 9110
    /// section 5.5 allows visible characters, space and tab in a field value; a CR or LF would end the
    /// header and start another (header injection), a NUL would cut it.
    public static func headerProblem(for job: Job) -> String? {
        if let problem = fieldValueProblem(Array(job.messageId.utf8)) {
            return "the apns-id header holds \(problem), which an HTTP request header cannot carry; no request was sent"
        }
        if let traceparent = job.traceparentHeader {
            if let problem = fieldValueProblem(traceparent) {
                return "the traceparent header holds \(problem), which an HTTP request header cannot carry; no request was sent"
            }
            if String(validating: traceparent, as: UTF8.self) == nil {
                return "the traceparent header is not UTF-8, which this HTTP request header cannot carry; no request was sent"
            }
        }
        return nil
    }

    private static func fieldValueProblem(_ bytes: [UInt8]) -> String? {
        guard let bad = bytes.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else { return nil }
        switch bad {
        case 0x00: return "a NUL byte"
        case 0x0A: return "a line feed (LF)"
        case 0x0D: return "a carriage return (CR)"
        default: return "the control character 0x\(String(bad, radix: 16, uppercase: true))"
        }
    }

    /// POSTs the record value to ``url``; the outcome follows contract section 6 (http). A job whose
    /// `apns-id` or `traceparent` cannot be a request header is `failed` / `invalidPayload` without a
    /// request (``headerProblem(for:)``).
    /// - Throws: ``TransportError`` when no HTTP status arrived (reported as `failed` / `workerError`).
    public func perform(_ job: Job) async throws -> WorkerOutcome {
        if let problem = Self.headerProblem(for: job) {
            return .failed(.invalidPayload, detail: problem)
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(job.value)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(job.messageId, forHTTPHeaderField: "apns-id")
        request.setValue(String(job.attempt), forHTTPHeaderField: Self.attemptHeader)
        if let traceparent = job.traceparent { request.setValue(traceparent, forHTTPHeaderField: "traceparent") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let timeout = min(requestTimeout, job.remaining)
        try Task.checkCancellation()
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request, timeout: timeout)
        } catch {
            // A timeout capped by the budget fires at the deadline, where the executor reports `timeout`.
            if Task.isCancelled { throw CancellationError() }
            throw TransportError(description: "POST \(url.absoluteString) failed: \(Self.describe(error))")
        }
        guard let http = response as? HTTPURLResponse else {
            throw TransportError(description: "POST \(url.absoluteString): not an HTTP response")
        }
        return Self.outcome(status: http.statusCode, body: data)
    }

    /// Maps an HTTP response to an outcome (contract section 6, http).
    public static func outcome(status: Int, body: Data) -> WorkerOutcome {
        switch status {
        case 204:
            return .noData
        case 200..<300:
            if !body.isEmpty, body.count <= maxParsedBodyBytes,
               let object = try? JSONDecoder().decode([String: JSONValue].self, from: body),
               let text = object["result"]?.stringValue, let result = BackgroundFetchResult(rawValue: text) {
                let retryable = object["retryable"] == .bool(true)
                return WorkerOutcome(result, reason: object["reason"]?.stringValue.map { ResultReason($0) }, retryable: retryable)
            }
            return .newData
        case 429, 502, 503, 504:
            return .failed(.workerError, detail: "HTTP status \(status)", retryable: true)
        default:
            return .failed(.workerError, detail: "HTTP status \(status)")
        }
    }

    static func describe(_ error: Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           let text = underlying.userInfo[NSLocalizedDescriptionKey] as? String {
            return text
        }
        if let text = nsError.userInfo[NSLocalizedDescriptionKey] as? String { return text }
        if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut { return "the request timed out" }
        return "\(nsError.domain) \(nsError.code)"
    }
}
