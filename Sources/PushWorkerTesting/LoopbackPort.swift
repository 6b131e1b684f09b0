import Foundation

/// Free TCP ports on loopback, for tests that must name a port before starting a server (e.g. an
/// end-to-end test of a `pushworker run` whose stderr is closed, so the port it picked cannot be read
/// from its log).
public enum LoopbackPort {
    /// A TCP port on 127.0.0.1 that was free a moment ago: bound with port 0, read, released. Another
    /// process may take it in between; prefer a server that binds port 0 itself where possible.
    /// - Throws: ``RunningCommandError`` when no socket can be bound.
    public static func free() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RunningCommandError("no socket for a free port: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw RunningCommandError("no free port on 127.0.0.1") }
        return UInt16(bigEndian: address.sin_port)
    }
}
