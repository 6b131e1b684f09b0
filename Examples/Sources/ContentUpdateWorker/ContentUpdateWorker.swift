import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerCore

/// Refreshes one content item per `content-update` push, as an app woken by a silent push would: reads
/// `contentId`, fetches `<baseURL>/<contentId>` over HTTP, and reports whether there was anything new.
///
/// Built from the config file's `workerSettings."content-update"` section (``Settings``, a
/// `ConfigurableWorker`), or directly with ``init(baseURL:requestTimeout:versions:session:responses:onNewContent:)``.
///
/// Outcomes:
/// - no `contentId` in the payload → `noData` / `noContentId` (nothing is fetched);
/// - `304 Not Modified` to the conditional request (`If-None-Match` / `If-Modified-Since` from the
///   last fetch), or a `200` whose body is the same as last time → `noData` / `unchanged`;
/// - `200` with new content → `newData` (after ``onNewContent`` accepted it);
/// - `404` → `failed` / `contentNotFound`;
/// - any other status or a transport error → thrown, so `failed` / `workerError` with the status or error;
/// - the budget runs out → the request is cancelled and the service reports `failed` / `timeout`.
///
/// The request timeout is the smaller of ``requestTimeout`` and the job's remaining budget
/// (`Job.remaining`), so the worker gives up on its own just before the deadline. The payload chooses
/// only the last path component (percent-encoded), never the host.
public struct ContentUpdateWorker: TypedWorker {
    /// The payload type: `{"contentId": "…"}` beside `aps` and `type`.
    public typealias Payload = ContentUpdate

    /// Where content lives; the item is `<baseURL>/<percent-encoded contentId>`.
    public let baseURL: URL
    /// The longest a request may take (default 10 s); capped by the job's remaining budget.
    public let requestTimeout: Duration
    /// What this process fetched last, per item.
    public let versions: ContentVersions
    /// Given each new content item (its id and body) before the outcome is `newData`, e.g. to write it
    /// to a cache; an error it throws makes the result `failed` / `workerError`. Default: nothing.
    public let onNewContent: @Sendable (_ contentId: String, _ body: Data) async throws -> Void
    /// Counts the content server's answers by status (``makeResponsesCounter(in:)``), or `nil`.
    public let responses: MetricCounter?
    private let session: URLSession

    /// Creates the worker.
    /// - Parameters:
    ///   - baseURL: where content lives, e.g. `https://cdn.example.com/content`.
    ///   - requestTimeout: the longest a request may take (default 10 s), capped by the remaining budget.
    ///   - versions: the store of fetched versions (default: a new one).
    ///   - session: the URL session (default: an ephemeral session of its own, reused across jobs so
    ///     connections are kept alive).
    ///   - responses: counts the content server's answers by status (default: not counted).
    ///   - onNewContent: given each new content item before the outcome is `newData`.
    public init(
        baseURL: URL,
        requestTimeout: Duration = .seconds(10),
        versions: ContentVersions = ContentVersions(),
        session: URLSession? = nil,
        responses: MetricCounter? = nil,
        onNewContent: @escaping @Sendable (_ contentId: String, _ body: Data) async throws -> Void = { _, _ in }
    ) {
        self.baseURL = baseURL
        self.requestTimeout = requestTimeout
        self.versions = versions
        self.responses = responses
        self.onNewContent = onNewContent
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.urlCache = nil
            self.session = URLSession(configuration: configuration)
        }
    }

    /// The URL of one content item: `<baseURL>/<contentId>` with the id percent-encoded as one path
    /// component (so `a/b` or `..` cannot leave the base path).
    public func url(for contentId: String) -> URL {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#%")
        let component = contentId.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let escaped = component == "." ? "%2E" : component == ".." ? "%2E%2E" : component
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        return URL(string: base + "/" + escaped) ?? baseURL
    }

    /// Fetches the item named by the payload's `contentId`; see the type's documentation for outcomes.
    /// - Throws: ``ContentFetchError`` for an unexpected status; `URLError` for transport errors;
    ///   `CancellationError` when the budget runs out; what ``onNewContent`` throws.
    public func perform(_ payload: ContentUpdate, job: Job) async throws -> WorkerOutcome {
        guard let contentId = payload.contentId, !contentId.isEmpty else {
            return WorkerOutcome(.noData, reason: "noContentId")
        }
        let url = url(for: contentId)
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        if let traceparent = job.traceparent { request.setValue(traceparent, forHTTPHeaderField: "traceparent") }
        let known = versions.version(of: contentId)
        if let etag = known?.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let lastModified = known?.lastModified { request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }

        try Task.checkCancellation()
        // min(own timeout, time left): precise to the ms (URLSession's own timeoutInterval is whole seconds
        // on Linux). Running out of the budget here is reported as `timeout` by the service.
        let body: Data
        let response: URLResponse
        do {
            (body, response) = try await session.data(for: request, timeout: min(requestTimeout, job.remaining))
        } catch {
            responses?.increment(labels: ["error"])
            throw error
        }
        guard let http = response as? HTTPURLResponse else {
            responses?.increment(labels: ["error"])
            throw ContentFetchError(.notHTTP, url: url.absoluteString)
        }
        responses?.increment(labels: [[200, 304, 404].contains(http.statusCode) ? String(http.statusCode) : "other"])
        switch http.statusCode {
        case 304:
            return WorkerOutcome(.noData, reason: "unchanged")
        case 404:
            return .failed("contentNotFound", detail: "no content '\(contentId)' at \(url.absoluteString)")
        case 200:
            var hasher = Hasher()
            hasher.combine(body)
            let version = ContentVersions.Version(
                etag: http.value(forHTTPHeaderField: "ETag"),
                lastModified: http.value(forHTTPHeaderField: "Last-Modified"),
                digest: hasher.finalize())
            guard known?.digest != version.digest else {
                versions.record(version, for: contentId)
                return WorkerOutcome(.noData, reason: "unchanged")
            }
            try Task.checkCancellation()
            try await onNewContent(contentId, body)
            versions.record(version, for: contentId)
            return .newData
        default:
            throw ContentFetchError(.unexpectedStatus, url: url.absoluteString, status: http.statusCode)
        }
    }
}
