import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerCore

/// One HTTP request from a test, e.g. to the service's `/metrics`, `/healthz` or `/readyz`, or to a
/// worker's own endpoint: a fresh ephemeral `URLSession` without a cache, so every call reaches the server.
public enum HTTPProbe {
    /// Sends one request.
    /// - Parameters:
    ///   - url: the URL, e.g. `http://127.0.0.1:9400/metrics`.
    ///   - method: the method (default `GET`).
    ///   - timeout: the request timeout (default 10 s), kept exactly (`URLSession.data(for:timeout:)`:
    ///     `URLRequest.timeoutInterval` alone is whole seconds on Linux).
    /// - Returns: the status, the body as UTF-8 text, and the headers by lower-cased name.
    /// - Throws: ``RunningCommandError`` for a URL that does not parse; `URLError` for transport errors and
    ///   `URLError(.timedOut)` after `timeout`.
    public static func request(_ url: String, method: String = "GET", timeout: Duration = .seconds(10)) async throws -> (status: Int, body: String, headers: [String: String]) {
        guard let parsed = URL(string: url) else { throw RunningCommandError("not a URL: \(url)") }
        var request = URLRequest(url: parsed)
        request.httpMethod = method
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request, timeout: timeout)
        guard let http = response as? HTTPURLResponse else { throw RunningCommandError("not an HTTP response from \(url)") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return (http.statusCode, String(decoding: data, as: UTF8.self), headers)
    }
}
