import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushWorkerEndpoints
import PushWorkerTesting
import Synchronization
import Testing

/// The libmicrohttpd endpoint server over loopback, with URLSession as the client.
@Suite(.timeLimit(.minutes(1)))
struct EndpointServerTests {
    static func get(_ url: String, method: String = "GET") async throws -> (status: Int, headers: [String: String], body: String) {
        let answer = try await HTTPProbe.request(url, method: method)
        return (answer.status, answer.headers, answer.body)
    }

    static func makeServer(host: String = "127.0.0.1", port: UInt16 = 0, calls: Calls? = nil) throws(EndpointServerError) -> EndpointServer {
        try EndpointServer(host: host, port: port, routes: [
            "/hello": { request in
                calls?.add(request)
                return EndpointResponse(status: 200, text: "hello\n")
            },
            "/down": { _ in EndpointResponse(status: 503, contentType: "application/json", body: Array(#"{"ok":false}"#.utf8)) },
        ])
    }

    @Test func answersKnownPathsWithTheHandlersResponse() async throws {
        let calls = Calls()
        let server = try Self.makeServer(calls: calls)
        defer { server.stop() }
        #expect(server.port != 0, "port 0 picked a free port")
        let hello = try await Self.get("http://127.0.0.1:\(server.port)/hello?x=1")
        #expect(hello.status == 200)
        #expect(hello.body == "hello\n")
        #expect(hello.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(calls.all == [EndpointRequest(method: "GET", path: "/hello")], "the query string is not part of the path")
        let down = try await Self.get("http://127.0.0.1:\(server.port)/down")
        #expect(down.status == 503)
        #expect(down.body == #"{"ok":false}"#)
        #expect(down.headers["content-type"] == "application/json")
    }

    @Test func unknownPathsAre404AndOtherMethods405() async throws {
        let calls = Calls()
        let server = try Self.makeServer(calls: calls)
        defer { server.stop() }
        let missing = try await Self.get("http://127.0.0.1:\(server.port)/nope")
        #expect(missing.status == 404)
        #expect(missing.body.contains("/hello"))
        for method in ["POST", "PUT", "DELETE"] {
            let refused = try await Self.get("http://127.0.0.1:\(server.port)/hello", method: method)
            #expect(refused.status == 405, "\(method)")
            #expect(refused.headers["allow"] == "GET, HEAD")
        }
        #expect(calls.all.isEmpty, "the handler never ran for refused methods")
    }

    @Test func headSendsTheHeadersButNoBody() async throws {
        let calls = Calls()
        let server = try Self.makeServer(calls: calls)
        defer { server.stop() }
        let head = try await Self.get("http://127.0.0.1:\(server.port)/hello", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["content-length"] == "6")
        #expect(calls.all == [EndpointRequest(method: "HEAD", path: "/hello")])
    }

    @Test func aBusyPortIsReportedAsAddressInUse() throws {
        let first = try Self.makeServer()
        defer { first.stop() }
        do {
            let second = try Self.makeServer(port: first.port)
            second.stop()
            Issue.record("a second server started on the busy port \(first.port)")
        } catch {
            #expect(error.code == .addressInUse)
            #expect(error.port == first.port)
            #expect(error.message.contains("127.0.0.1:\(first.port)"))
        }
    }

    @Test func badHostsAreRefusedAndNamesResolve() throws {
        #expect(throws: EndpointServerError.self) { _ = try EndpointAddress.resolve(host: "", port: 1) }
        #expect(throws: EndpointServerError.self) { _ = try EndpointAddress.resolve(host: "no-such-host.invalid", port: 1) }
        #expect(try EndpointAddress.resolve(host: "0.0.0.0", port: 9400).description == "0.0.0.0:9400")
        #expect(try EndpointAddress.resolve(host: "::", port: 9400).description == "[::]:9400")
        #expect(try EndpointAddress.resolve(host: "[::1]", port: 1).isIPv6)
        #expect(try EndpointAddress.resolve(host: "localhost", port: 80).description == "127.0.0.1:80")
    }

    @Test func listensOnIPv6Loopback() async throws {
        let server: EndpointServer
        do {
            server = try Self.makeServer(host: "::1")
        } catch {
            print("skipped: no IPv6 loopback on this machine (\(error))")
            return
        }
        defer { server.stop() }
        #expect(server.address.description == "[::1]:\(server.port)")
        // URLSession on Linux refuses bracketed IPv6 hosts: speak HTTP/1.0 over a socket.
        let reply = try rawIPv6Get(port: server.port, path: "/hello")
        #expect(reply.hasPrefix("HTTP/1.0 200") || reply.hasPrefix("HTTP/1.1 200"), "\(reply)")
        #expect(reply.hasSuffix("\r\n\r\nhello\n"))
    }

    @Test func stopClosesThePort() async throws {
        let server = try Self.makeServer()
        let port = server.port
        #expect(try await Self.get("http://127.0.0.1:\(port)/hello").status == 200)
        server.stop()
        server.stop()  // twice is fine
        await #expect(throws: (any Error).self) { _ = try await Self.get("http://127.0.0.1:\(port)/hello") }
        // The port is free again.
        let again = try Self.makeServer(port: port)
        again.stop()
    }

    @Test func manyRequestsInParallel() async throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<40 { group.addTask { try await Self.get("http://127.0.0.1:\(server.port)/hello").status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 40)
        #expect(Set(statuses) == [200])
    }
}

/// Requests seen by a handler.
final class Calls: Sendable {
    private let requests = Mutex<[EndpointRequest]>([])
    func add(_ request: EndpointRequest) { requests.withLock { $0.append(request) } }
    var all: [EndpointRequest] { requests.withLock { $0 } }
}

/// Sends `GET path HTTP/1.0` to [::1]:port and returns the whole reply.
func rawIPv6Get(port: UInt16, path: String) throws -> String {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = port.bigEndian
    address.sin6_addr = in6addr_loopback
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    }
    guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: localhost\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        reply += buffer[0..<count]
    }
    return String(decoding: reply, as: UTF8.self)
}
