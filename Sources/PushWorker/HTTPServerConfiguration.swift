/// The HTTP server of `/metrics`, `/healthz` and `/readyz` (configuration key `httpServer`).
public struct HTTPServerConfiguration: Sendable, Equatable {
    /// Whether the service serves the endpoints. Default `true` (env `PUSHWORKER_HTTP_ENABLED`).
    public var enabled = true
    /// The address to listen on: an IPv4/IPv6 literal or a resolvable name. Default `0.0.0.0` (every IPv4
    /// interface; env `PUSHWORKER_HTTP_HOST`).
    public var host = "0.0.0.0"
    /// The TCP port; 0 picks a free port (``PushWorkerService/httpServerPort`` then names it). Default
    /// 9400 (env `PUSHWORKER_HTTP_PORT`).
    public var port: UInt16 = 9400

    /// The defaults: enabled on 0.0.0.0:9400.
    public init() {}

    /// Creates a configuration.
    /// - Parameters:
    ///   - enabled: whether the service serves the endpoints.
    ///   - host: the address to listen on (default `0.0.0.0`).
    ///   - port: the TCP port, 0 for any free one (default 9400).
    public init(enabled: Bool, host: String = "0.0.0.0", port: UInt16 = 9400) {
        self.enabled = enabled
        self.host = host
        self.port = port
    }
}
