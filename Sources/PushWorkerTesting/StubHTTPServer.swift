import Foundation
import Synchronization

/// A small HTTP/1.1 server on 127.0.0.1 for the http worker's tests: keep-alive connections, one thread
/// per connection, requests answered by a handler.
final class LoopbackHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [String: String]
        var body: Data
    }

    struct Response: Sendable {
        var status: Int
        var body: Data = Data()
        var delay: Duration = .zero
    }

    let port: UInt16
    private let listener: Int32
    private let state = Mutex<(connections: Int, requests: [Request])>((0, []))

    init(handler: @escaping @Sendable (Request) -> Response) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                state.withLock { $0.connections += 1 }
                Thread.detachNewThread { [self] in serve(connection, handler) }
            }
        }
    }

    /// TCP connections accepted so far.
    var connections: Int { state.withLock { $0.connections } }
    /// Requests received so far.
    var requests: [Request] { state.withLock { $0.requests } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
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
        while true {
            let separator = Data("\r\n\r\n".utf8)
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
            var out = Data("HTTP/1.1 \(response.status) Status\r\nContent-Length: \(response.body.count)\r\nConnection: keep-alive\r\n\r\n".utf8)
            out.append(response.body)
            let written = out.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 { return }
        }
    }
}
