/// Answers one path. Runs on libmicrohttpd's polling thread: it must be quick and synchronous (a snapshot
/// read of `Mutex`-protected state), never wait for Swift concurrency or other I/O.
public typealias EndpointHandler = @Sendable (EndpointRequest) -> EndpointResponse
