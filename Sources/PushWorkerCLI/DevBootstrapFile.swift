import Foundation

/// The file in which `pushworker dev` leaves its embedded cluster's address while it runs, so that
/// `produce`, `results` and `redrive` in another terminal find the cluster without `--bootstrap-servers`,
/// although its port changes each start (librdkafka 2.0.2's mock cluster has no fixed listener port).
///
/// - Where: `$PUSHWORKER_DEV_BOOTSTRAP_FILE` (empty: no file is written or read), else
///   `$XDG_RUNTIME_DIR/pushworker/dev-bootstrap`, else `$HOME/.pushworker/dev-bootstrap`; the directory is
///   created with mode 0700.
/// - What: two lines, `bootstrap.servers=HOST:PORT[,...]` (as dev's first stdout line) and `pid=N`.
/// - Written atomically (a temporary file renamed over it) once the cluster is up, unless another dev that
///   is still running wrote it (that one's address stays: a second dev says so in a warning); removed when
///   the dev that wrote it stops. A file whose process is gone (a dev killed with SIGKILL) is ignored by
///   readers and replaced by the next dev.
enum DevBootstrapFile {
    /// The environment variable that names the file (empty: none).
    static let environmentVariable = "PUSHWORKER_DEV_BOOTSTRAP_FILE"

    /// The file's path for `environment`, or `nil` when there is none (the variable set empty, or neither
    /// `XDG_RUNTIME_DIR` nor `HOME` set).
    static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let named = environment[environmentVariable] { return named.isEmpty ? nil : named }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/pushworker/dev-bootstrap" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.pushworker/dev-bootstrap" }
        return nil
    }

    /// The file's text for `servers` written by process `pid`.
    static func contents(servers: String, pid: Int32) -> String { "bootstrap.servers=\(servers)\npid=\(pid)\n" }

    /// The servers and the writer's process id in `text`, or `nil` when it is not such a file.
    static func parse(_ text: String) -> (servers: String, pid: Int32)? {
        var servers: String?
        var pid: Int32?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("bootstrap.servers=") { servers = String(line.dropFirst("bootstrap.servers=".count)) }
            if line.hasPrefix("pid=") { pid = Int32(line.dropFirst("pid=".count)) }
        }
        guard let servers, !servers.isEmpty, let pid, pid > 0 else { return nil }
        return (servers, pid)
    }

    /// Writes `servers` for this process.
    /// - Returns: the path written.
    /// - Throws: an error from creating the directory or writing the file.
    static func write(servers: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        guard let path = path(environment: environment) else { return nil }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let temporary = path + ".\(getpid()).tmp"
        try contents(servers: servers, pid: getpid()).write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))  // NUL-safe: strerror's own text
            unlink(temporary)
            throw CommandLineError(.failure, "cannot write \(path): \(reason)")
        }
        return path
    }

    /// Removes the file at `path` if this process wrote it (a later dev's file stays).
    static func remove(_ path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), parse(text)?.pid == getpid() else { return }
        unlink(path)
    }

    /// The servers of a running dev, and the file they came from, or `nil` when there is no file, it is not
    /// such a file, or its process has ended.
    static func read(environment: [String: String] = ProcessInfo.processInfo.environment) -> (servers: String, path: String, pid: Int32)? {
        guard let path = path(environment: environment), let text = try? String(contentsOfFile: path, encoding: .utf8),
              let (servers, pid) = parse(text) else { return nil }
        // Alive: kill(pid, 0) succeeds, or fails with EPERM (a process of another user holds the id).
        guard kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return (servers, path, pid)
    }
}
