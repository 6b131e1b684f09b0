import CMicroHTTPD
import Foundation
import Synchronization

/// A small HTTP/1.1 server for operational endpoints (`/metrics`, `/healthz`, …) on libmicrohttpd (Debian
/// `libmicrohttpd-dev`), with one internal polling thread.
///
/// Each path is answered by its ``EndpointHandler``. Only `GET` and `HEAD` are accepted (405 with
/// `Allow: GET, HEAD` otherwise); unknown paths get 404. At most `connectionLimit` connections are open at
/// once; an idle connection is closed after `connectionTimeoutSeconds`.
///
/// The server listens from `init` until ``stop()`` or `deinit`.
public final class EndpointServer: Sendable {
    /// The address listened on, with the bound port (the chosen one when port 0 was asked for).
    public let address: EndpointAddress
    /// The port listened on.
    public var port: UInt16 { address.port }
    private let daemon: Mutex<DaemonHandle?>

    /// Starts listening.
    /// - Parameters:
    ///   - host: an IPv4/IPv6 literal or a resolvable name (see ``EndpointAddress/resolve(host:port:)``).
    ///   - port: the TCP port; 0 picks a free one (read it back from ``port``).
    ///   - routes: the handler of each path, e.g. `["/metrics": …]`.
    ///   - connectionLimit: the most connections open at once (default 32).
    ///   - connectionTimeoutSeconds: idle connections are closed after this long (default 10 s).
    ///   - logHandler: receives libmicrohttpd's error messages while the server runs (default: dropped).
    /// - Throws: ``EndpointServerError`` — `invalidAddress`, `addressInUse` (the port is taken), or
    ///   `startFailed` with libmicrohttpd's message.
    public init(
        host: String, port: UInt16, routes: [String: EndpointHandler], connectionLimit: Int = 32,
        connectionTimeoutSeconds: Int = 10, logHandler: (@Sendable (String) -> Void)? = nil
    ) throws(EndpointServerError) {
        let requested = try EndpointAddress.resolve(host: host, port: port)
        let context = ServerContext(routes: routes, log: logHandler)
        let unmanaged = Unmanaged.passRetained(context)
        let logger = UnsafeMutablePointer<pushworker_mhd_logger>.allocate(capacity: 1)
        logger.initialize(to: pushworker_mhd_logger(sink: { context, message, errorNumber in
            guard let context, let message else { return }
            Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().logged(String(cString: message), errorNumber: errorNumber)  // NUL-safe: libmicrohttpd's own log text
        }, context: unmanaged.toOpaque()))
        let started = requested.storage.withUnsafeBytes { bytes in
            pushworker_mhd_start(
                bytes.baseAddress?.assumingMemoryBound(to: sockaddr.self), requested.isIPv6 ? 1 : 0,
                UInt32(clamping: max(1, connectionLimit)), UInt32(clamping: max(0, connectionTimeoutSeconds)),
                accessHandler, unmanaged.toOpaque(), logger)
        }
        let (messages, errorNumber) = context.finishStarting()
        guard let started else {
            logger.deinitialize(count: 1)
            logger.deallocate()
            unmanaged.release()
            let detail = messages.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "libmicrohttpd did not start"
            if errorNumber == EADDRINUSE || detail.contains("already in use") {
                throw EndpointServerError(.addressInUse, host: host, port: port, "cannot listen on \(requested): the address is already in use")
            }
            throw EndpointServerError(.startFailed, host: host, port: port, "cannot listen on \(requested): \(detail)")
        }
        let bound = pushworker_mhd_bound_port(started)
        address = requested.with(port: bound != 0 ? bound : port)
        daemon = Mutex(DaemonHandle(daemon: started, logger: logger, context: unmanaged))
    }

    /// Stops listening and closes every connection (`MHD_stop_daemon`, which waits for the polling thread
    /// and so for a handler still running). Calling it twice does nothing; never call it from a handler.
    public func stop() {
        let handle = daemon.withLock { handle -> DaemonHandle? in
            defer { handle = nil }
            return handle
        }
        guard let handle else { return }
        MHD_stop_daemon(handle.daemon)
        handle.logger.deinitialize(count: 1)
        handle.logger.deallocate()
        handle.context.release()
    }

    deinit {
        stop()
    }
}

/// libmicrohttpd's access handler: answers every request on its first call, from the routing table in
/// `cls`.
private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, _, _ in
    guard let cls, let connection else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let (response, allow) = context.respond(
        method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/")  // NUL-safe: libmicrohttpd's C strings; a %00 can only shorten the path to one of the fixed read-only routes
    let made = response.body.withUnsafeBytes { body in
        MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress), .RESPMEM_MUST_COPY)
    }
    guard let made else { return .NO }
    defer { MHD_destroy_response(made) }
    _ = MHD_add_response_header(made, "Content-Type", response.contentType)
    _ = MHD_add_response_header(made, "Cache-Control", "no-store")
    if allow { _ = MHD_add_response_header(made, "Allow", "GET, HEAD") }
    return MHD_queue_response(connection, UInt32(clamping: response.status), made)
}
