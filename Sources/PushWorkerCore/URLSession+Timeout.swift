import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSession {
    /// `data(for:)` with a request timeout precise to the millisecond, for workers that size their HTTP
    /// timeouts from `Job.remaining`.
    ///
    /// On Linux (swift-corelibs-foundation) `URLRequest.timeoutInterval` is truncated to whole seconds, and
    /// an interval under one second times the request out at once. This sets `timeoutInterval` to the
    /// timeout rounded up to whole seconds (at least 1) and enforces the exact timeout itself: when it
    /// passes first, the request is cancelled and `URLError(.timedOut)` is thrown.
    /// - Parameters:
    ///   - request: the request (its `timeoutInterval` is replaced).
    ///   - timeout: the longest the request may take, e.g. `min(ownTimeout, job.remaining)`.
    /// - Returns: the body and the response.
    /// - Throws: `URLError(.timedOut)` after `timeout`; what `data(for:)` throws; `CancellationError`
    ///   when the calling task is cancelled (e.g. at the job's deadline).
    public func data(for request: URLRequest, timeout: Duration) async throws -> (Data, URLResponse) {
        var request = request
        request.timeoutInterval = max(1, timeout.timeInterval.rounded(.up))
        let limited = request
        let result = try await withThrowingTaskGroup(of: Response.self) { group in
            group.addTask { Response(try await self.data(for: limited)) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw URLError(.timedOut)
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
        return (result.data, result.response)
    }

    /// The answer of a request, carried out of a child task.
    private struct Response: @unchecked Sendable {
        // @unchecked: URLResponse is an immutable value once received; it is handed over once, from the
        // child task that received it to the caller, and never shared or mutated.
        var data: Data
        var response: URLResponse
        init(_ answer: (Data, URLResponse)) { (data, response) = answer }
    }
}
