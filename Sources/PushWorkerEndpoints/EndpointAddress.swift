import Foundation

/// A local address to listen on: an IPv4 or IPv6 socket address with its port.
public struct EndpointAddress: Sendable, Hashable, CustomStringConvertible {
    /// The `sockaddr_in` or `sockaddr_in6` bytes.
    let storage: [UInt8]
    /// Whether it is an IPv6 address.
    public let isIPv6: Bool
    /// The numeric host, e.g. `0.0.0.0` or `::1`.
    public let numericHost: String
    /// The port (0 = any free port when listening).
    public let port: UInt16

    /// `host:port`, with an IPv6 host in brackets (`[::1]:9400`).
    public var description: String { isIPv6 ? "[\(numericHost)]:\(port)" : "\(numericHost):\(port)" }

    /// Resolves `host` for listening on `port`.
    ///
    /// An IPv4 or IPv6 literal is taken as is (`0.0.0.0`, `127.0.0.1`, `::`, `::1`); a name is resolved with
    /// `getaddrinfo`, and its first IPv4 address is preferred over IPv6 ones (so `localhost` is
    /// `127.0.0.1` wherever `/etc/hosts` lists both).
    /// - Throws: ``EndpointServerError/Code/invalidAddress`` if `host` is empty or does not resolve.
    public static func resolve(host: String, port: UInt16) throws(EndpointServerError) -> EndpointAddress {
        let trimmed = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard !trimmed.isEmpty else {
            throw EndpointServerError(.invalidAddress, host: host, port: port, "the host is empty; use an address such as 0.0.0.0, 127.0.0.1 or ::")
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, trimmed, &v4) == 1 { return EndpointAddress(v4, port: port) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, trimmed, &v6) == 1 { return EndpointAddress(v6, port: port) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(trimmed, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))  // NUL-safe: gai_strerror's own text
            throw EndpointServerError(.invalidAddress, host: host, port: port, "the host '\(host)' is not an IP address and does not resolve (\(reason))")
        }
        defer { freeaddrinfo(first) }
        var found: EndpointAddress?
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if current.pointee.ai_family == AF_INET, let address = current.pointee.ai_addr {
                let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                return EndpointAddress(v4, port: port)
            }
            if found == nil, current.pointee.ai_family == AF_INET6, let address = current.pointee.ai_addr {
                found = EndpointAddress(address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }, port: port)
            }
            entry = current.pointee.ai_next
        }
        guard let found else {
            throw EndpointServerError(.invalidAddress, host: host, port: port, "the host '\(host)' has no IPv4 or IPv6 address")
        }
        return found
    }

    init(_ address: in_addr, port: UInt16) {
        var socket = sockaddr_in()
        socket.sin_family = sa_family_t(AF_INET)
        socket.sin_port = port.bigEndian
        socket.sin_addr = address
        storage = withUnsafeBytes(of: socket) { Array($0) }
        isIPv6 = false
        self.port = port
        numericHost = Self.numeric(AF_INET, address)
    }

    init(_ address: in6_addr, port: UInt16) {
        var socket = sockaddr_in6()
        socket.sin6_family = sa_family_t(AF_INET6)
        socket.sin6_port = port.bigEndian
        socket.sin6_addr = address
        storage = withUnsafeBytes(of: socket) { Array($0) }
        isIPv6 = true
        self.port = port
        numericHost = Self.numeric(AF_INET6, address)
    }

    /// The same address with another port.
    func with(port: UInt16) -> EndpointAddress {
        if isIPv6 {
            return EndpointAddress(storage.withUnsafeBytes { $0.loadUnaligned(as: sockaddr_in6.self).sin6_addr }, port: port)
        }
        return EndpointAddress(storage.withUnsafeBytes { $0.loadUnaligned(as: sockaddr_in.self).sin_addr }, port: port)
    }

    private static func numeric(_ family: Int32, _ address: in_addr) -> String {
        withUnsafeBytes(of: address) { numeric(family, $0) }
    }

    private static func numeric(_ family: Int32, _ address: in6_addr) -> String {
        withUnsafeBytes(of: address) { numeric(family, $0) }
    }

    private static func numeric(_ family: Int32, _ bytes: UnsafeRawBufferPointer) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(family, bytes.baseAddress, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
