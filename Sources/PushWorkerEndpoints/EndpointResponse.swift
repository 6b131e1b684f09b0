/// An endpoint's answer. For a `HEAD` request the body is not sent; its length is.
public struct EndpointResponse: Sendable, Equatable {
    /// The HTTP status code, e.g. 200 or 503.
    public var status: Int
    /// The `Content-Type` header.
    public var contentType: String
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A text response (`text/plain; charset=utf-8` unless `contentType` says otherwise).
    public init(status: Int, text: String, contentType: String = "text/plain; charset=utf-8") {
        self.init(status: status, contentType: contentType, body: Array(text.utf8))
    }
}
