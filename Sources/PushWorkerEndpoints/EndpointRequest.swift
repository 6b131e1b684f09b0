/// A request as an endpoint handler sees it.
public struct EndpointRequest: Sendable, Equatable {
    /// `GET` or `HEAD` (other methods are answered 405 before any handler runs).
    public var method: String
    /// The path, without the query string, e.g. `/metrics`.
    public var path: String

    /// Creates a request.
    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }
}
