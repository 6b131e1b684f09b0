import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's standard output or standard error, written with `write(2)`: unbuffered, and never a trap.
///
/// Foundation's `FileHandle.write(_:)` stops the process when a write fails (it wraps a throwing write in
/// a forced `try`), so a closed (`2>&-`) or broken stderr would crash the service at its first log line. Writes here
/// report the failure instead; the caller decides (the logger drops and counts the line, the command line
/// ends quietly when its stdout is closed).
///
/// A write to a pipe whose reader has gone raises `SIGPIPE`, which ends the process by default; the command
/// line installs a handler for it at start-up, so that such a write fails with `EPIPE` instead.
///
/// A descriptor that was closed when the process started (`2>&-`) is a hazard beyond the failed writes: the
/// next file or socket opened takes its number, and log lines would then be written into it (a Kafka
/// connection, say). ``reserveClosedDescriptors()`` holds such numbers with `/dev/null` and remembers that
/// the stream is closed, so writes to it still fail (and are counted) instead of going anywhere.
public enum StandardStream: Int32, Sendable, CaseIterable {
    /// File descriptor 1.
    case output = 1
    /// File descriptor 2.
    case error = 2

    /// Why a write did not complete.
    public struct WriteFailure: Error, Sendable, Equatable {
        /// The `errno` value: `EPIPE` (the reader closed the pipe), `EBADF` (the descriptor is closed), ...
        public var errorNumber: Int32

        /// Whether the stream's reader has gone away (`EPIPE`).
        public var isBrokenPipe: Bool { errorNumber == EPIPE }
    }

    /// Descriptors 0, 1 and 2 that were closed at start-up (bit N for descriptor N).
    private static let closedAtStart = Atomic<Int32>(0)

    /// Holds each of descriptors 0, 1 and 2 that is closed with `/dev/null`, so no file or socket opened
    /// later takes its number; stdout and stderr closed this way stay closed for ``write(_:)``. Call it
    /// first thing in `main`, before anything opens a descriptor (the command line does).
    public static func reserveClosedDescriptors() {
        var closed: Int32 = 0
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // open returns the lowest free number: this one, since the lower ones are open by now.
            let opened = open("/dev/null", O_RDWR)
            if opened == descriptor {
                closed |= 1 << descriptor
            } else if opened >= 0 {
                close(opened)
            }
        }
        closedAtStart.store(closed, ordering: .releasing)
    }

    /// Whether the stream was closed when the process started (see ``reserveClosedDescriptors()``).
    public var wasClosedAtStart: Bool { Self.closedAtStart.load(ordering: .acquiring) & (1 << rawValue) != 0 }

    /// Writes all of `bytes`, retrying after interrupted and partial writes.
    /// - Returns: `nil` when everything was written, otherwise the failure (`EAGAIN` on a non-blocking
    ///   descriptor that is full counts as a failure: the bytes left are not written).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> WriteFailure? {
        if wasClosedAtStart { return WriteFailure(errorNumber: EBADF) }
        return bytes.withUnsafeBytes { raw -> WriteFailure? in
            guard var next = raw.baseAddress else { return nil }
            var left = raw.count
            while left > 0 {
                #if canImport(Glibc)
                let written = Glibc.write(rawValue, next, left)
                #elseif canImport(Musl)
                let written = Musl.write(rawValue, next, left)
                #else
                let written = Darwin.write(rawValue, next, left)
                #endif
                if written < 0 {
                    if errno == EINTR { continue }
                    return WriteFailure(errorNumber: errno)
                }
                left -= written
                next += written
            }
            return nil
        }
    }

    /// Writes `text` and a line feed as one write.
    @discardableResult
    public func writeLine(_ text: String) -> WriteFailure? {
        var bytes = Array(text.utf8)
        bytes.append(0x0A)
        return write(bytes)
    }
}
