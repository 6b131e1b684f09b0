/// Why a content fetch failed; thrown from ``ContentUpdateWorker/perform(_:job:)``, so the result is
/// `failed` / `workerError` with ``description`` as its detail.
public struct ContentFetchError: Error, CustomStringConvertible, Sendable {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The content server answered with a status other than 200, 304 or 404.
        public static let unexpectedStatus = Code("unexpectedStatus")
        /// The answer was not an HTTP response.
        public static let notHTTP = Code("notHTTP")
    }

    /// The kind of failure.
    public var code: Code
    /// The URL fetched.
    public var url: String
    /// The HTTP status, when there was one.
    public var status: Int?

    /// Creates an error.
    public init(_ code: Code, url: String, status: Int? = nil) {
        self.code = code
        self.url = url
        self.status = status
    }

    /// One line: `content server answered HTTP 503 for https://…/article-42`.
    public var description: String {
        switch code {
        case .unexpectedStatus: "content server answered HTTP \(status ?? 0) for \(url)"
        default: "content server gave no HTTP response for \(url)"
        }
    }
}
