import Foundation
import PushWorkerTesting
import Synchronization

/// A content server for the tests: serves `/content/<id>` from a dictionary, with an `ETag` per version,
/// and answers `304 Not Modified` to a matching `If-None-Match`.
final class ContentServer: Sendable {
    final class Store: Sendable {
        let items: Mutex<[String: String]>
        init(_ items: [String: String]) { self.items = Mutex(items) }
    }

    let store: Store
    let http: StubHTTPServer

    init(_ items: [String: String], withValidators: Bool = true, delay: Duration = .zero) throws {
        let store = Store(items)
        self.store = store
        http = try StubHTTPServer { request in
            let prefix = "/content/"
            guard request.path.hasPrefix(prefix) else { return .init(status: 500) }
            let id = String(request.path.dropFirst(prefix.count)).removingPercentEncoding ?? ""
            if id == "unavailable" { return .init(status: 503) }
            guard let body = store.items.withLock({ $0[id] }) else { return .init(status: 404, delay: delay) }
            guard withValidators else { return .init(status: 200, body: Data(body.utf8), delay: delay) }
            let etag = "\"\(body.utf8.count)-\(body.hashValue)\""
            if request.headers["if-none-match"] == etag { return .init(status: 304, delay: delay) }
            return .init(status: 200, headers: ["ETag": etag], body: Data(body.utf8), delay: delay)
        }
    }

    /// `http://127.0.0.1:PORT/content`.
    var baseURL: URL { http.baseURL.appendingPathComponent("content") }

    func update(_ id: String, to body: String) { store.items.withLock { $0[id] = body } }

    deinit { http.stop() }
}
