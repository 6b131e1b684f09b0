import Foundation
import Synchronization

/// A small HTTP/1.1 server on `127.0.0.1` for testing workers that call HTTP services (the http worker, or
/// a Swift worker that fetches content): each request is answered by a handler closure.
///
/// Keep-alive connections, one thread per connection, bodies framed by `Content-Length` (what
/// `URLSession` sends for a `Data` body; chunked request bodies are not supported). Meant for tests on
/// loopback only, never for serving traffic.
/// ```swift
/// let server = try StubHTTPServer { request in
///     request.path == "/content/a-1" ? .init(status: 200, headers: ["ETag": "\"v1\""], body: Data("hello".utf8))
///                                    : .init(status: 404)
/// }
/// defer { server.stop() }
/// // point the worker at "http://127.0.0.1:\(server.port)"
/// ```
public final class StubHTTPServer: Sendable {
    /// A request as received.
    public struct Request: Sendable {
        /// The method, e.g. `GET`.
        public var method: String
        /// The request target, e.g. `/content/a-1?x=1` (not decoded).
        public var path: String
        /// Header fields by lower-cased name.
        public var headers: [String: String]
        /// The body (empty when there is none).
        public var body: Data
    }

    /// The answer to a request.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Extra header fields (`Content-Length` and `Connection` are set by the server).
        public var headers: [String: String]
        /// The body.
        public var body: Data
        /// How long to wait before answering (a slow server); default none.
        public var delay: Duration

        /// Creates a response.
        public init(status: Int, headers: [String: String] = [:], body: Data = Data(), delay: Duration = .zero) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
        }
    }

    /// The TCP port the server listens on (chosen by the system).
    public let port: UInt16
    private let listener: Int32
    private let state = Mutex<(connections: Int, requests: [Request], listening: Bool)>((0, [], true))

    /// Starts the server on `127.0.0.1` and an ephemeral port.
    /// - Parameter handler: answers each request (called on the connection's thread).
    /// - Throws: `POSIXError` if the socket cannot be bound.
    public init(handler: @escaping @Sendable (Request) -> Response) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        // The accept thread owns the listening descriptor and is the only one to close it. If `stop()`
        // closed it, the number could be reused by another server's socket while this thread is between
        // two `accept` calls, and this thread would then answer that server's connections.
        Thread.detachNewThread { [self] in
            defer {
                // Under the lock, so that a later `stop()` never shuts down a reused descriptor number.
                state.withLock { state in
                    state.listening = false
                    close(fd)
                }
            }
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return  // EINVAL once `stop()` has shut the socket down
                }
                state.withLock { $0.connections += 1 }
                Thread.detachNewThread { [self] in serve(connection, handler) }
            }
        }
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)")!  // invariant: a literal host and a numeric port always parse
    }

    /// TCP connections accepted so far.
    public var connections: Int { state.withLock { $0.connections } }
    /// Requests received so far, in arrival order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting connections (open keep-alive connections end when their client closes them).
    public func stop() {
        // Makes the blocked (or next) `accept` fail; the accept thread then closes the descriptor.
        state.withLock { state in
            if state.listening { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    private func serve(_ connection: Int32, _ handler: @Sendable (Request) -> Response) {
        defer { close(connection) }
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func fill() -> Bool {
            let count = read(connection, &chunk, chunk.count)
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        let separator = Data("\r\n\r\n".utf8)
        while true {
            var headerEnd = buffer.range(of: separator)
            while headerEnd == nil {
                guard fill() else { return }
                headerEnd = buffer.range(of: separator)
            }
            guard let end = headerEnd else { return }
            let head = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex..<end.upperBound)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < length { guard fill() else { return } }
            let body = Data(buffer.prefix(length))
            buffer.removeFirst(length)
            let request = Request(method: requestLine.first.map(String.init) ?? "", path: requestLine.dropFirst().first.map(String.init) ?? "", headers: headers, body: body)
            state.withLock { $0.requests.append(request) }
            let response = handler(request)
            if response.delay > .zero {
                Thread.sleep(forTimeInterval: Double(response.delay.components.seconds) + Double(response.delay.components.attoseconds) / 1e18)
            }
            var responseHead = "HTTP/1.1 \(response.status) Status\r\n"
            for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) { responseHead += "\(name): \(value)\r\n" }
            responseHead += "Content-Length: \(response.body.count)\r\nConnection: keep-alive\r\n\r\n"
            var out = Data(responseHead.utf8)
            out.append(response.body)
            let written = out.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 { return }
        }
    }
}
