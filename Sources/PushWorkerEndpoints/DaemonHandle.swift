import CMicroHTTPD

/// What a running daemon holds.
///
/// `@unchecked Sendable`: the pointers are read only by ``EndpointServer/stop()``, once, after taking the
/// handle out of the server's `Mutex`; libmicrohttpd's polling thread uses `logger` and `context` until
/// `MHD_stop_daemon` returns (it joins that thread), and only then are they freed.
struct DaemonHandle: @unchecked Sendable {
    let daemon: OpaquePointer
    let logger: UnsafeMutablePointer<pushworker_mhd_logger>
    let context: Unmanaged<ServerContext>
}
