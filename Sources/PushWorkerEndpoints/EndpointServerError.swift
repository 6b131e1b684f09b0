/// An endpoint server that cannot start, with the address it tried.
public struct EndpointServerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of an ``EndpointServerError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The host is neither an IPv4/IPv6 literal nor a name that resolves (`getaddrinfo`).
        public static let invalidAddress = Code("invalidAddress")
        /// Another socket listens on the port already (`EADDRINUSE`).
        public static let addressInUse = Code("addressInUse")
        /// libmicrohttpd could not start for another reason (permission, no such local address, …).
        public static let startFailed = Code("startFailed")
    }

    /// The kind of failure.
    public var code: Code
    /// The host as given.
    public var host: String
    /// The port as given (0 = any free port).
    public var port: UInt16
    /// What went wrong, as one line.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, host: String, port: UInt16, _ message: String) {
        self.code = code
        self.host = host
        self.port = port
        self.message = message
    }

    public var description: String { message }
}
