import Foundation
import Glibc
import Synchronization

/// A file descriptor this process owns (e.g. one end of a child's stdin, stdout or stderr pipe): closed by
/// ``close()`` or, at the latest, when the value is released.
///
/// Reads and writes retry on `EINTR`. One thread at a time reads or writes it, and that thread (or the owner
/// once no I/O is in progress) closes it: the number is read under the lock, but a blocking `read` runs
/// after unlock, so closing from another thread during a read could let the number be reused.
package final class OwnedDescriptor: Sendable {
    /// The descriptor, or -1 once closed.
    private let number: Mutex<Int32>

    /// Takes ownership of `descriptor` (closed with this value).
    package init(taking descriptor: Int32) { number = Mutex(descriptor) }

    /// The descriptor number, or -1 once closed.
    package var rawValue: Int32 { number.withLock { $0 } }

    /// Makes a pipe whose two ends are close-on-exec (`pipe2(O_CLOEXEC)`) and numbered 3 or higher, so a
    /// child's `dup2` onto 0, 1 or 2 never meets one of them.
    /// - Throws: ``ChildProcessError/Code/descriptorFailed`` with `errno`.
    package static func pipe(for program: String = "") throws(ChildProcessError) -> (read: OwnedDescriptor, write: OwnedDescriptor) {
        var ends: [Int32] = [-1, -1]
        let result = ends.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            if let pipe2 = GlibcExtensions.pipe2 { return pipe2(base, O_CLOEXEC) }
            // No pipe2 (never on glibc ≥ 2.9): a plain pipe, made close-on-exec at once.
            guard Glibc.pipe(base) == 0 else { return -1 }
            _ = fcntl(base[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(base[1], F_SETFD, FD_CLOEXEC)
            return 0
        }
        guard result == 0 else { throw ChildProcessError(.descriptorFailed, program: program, operation: "pipe2", errorNumber: errno) }
        let read = OwnedDescriptor(taking: ends[0])
        let write = OwnedDescriptor(taking: ends[1])
        try read.moveAboveStandardStreams(program: program)
        try write.moveAboveStandardStreams(program: program)
        return (read, write)
    }

    /// Opens `/dev/null` for reading and writing, close-on-exec, numbered 3 or higher.
    /// - Throws: ``ChildProcessError/Code/descriptorFailed`` with `errno`.
    package static func nullDevice(for program: String = "") throws(ChildProcessError) -> OwnedDescriptor {
        var descriptor: Int32
        repeat { descriptor = open("/dev/null", O_RDWR | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { throw ChildProcessError(.descriptorFailed, program: program, operation: "open /dev/null", errorNumber: errno) }
        let owned = OwnedDescriptor(taking: descriptor)
        try owned.moveAboveStandardStreams(program: program)
        return owned
    }

    /// A close-on-exec duplicate of `descriptor` (which stays the caller's), numbered 3 or higher.
    /// - Throws: ``ChildProcessError/Code/descriptorFailed`` with `errno` (e.g. `EBADF`).
    package static func duplicate(_ descriptor: Int32, for program: String = "") throws(ChildProcessError) -> OwnedDescriptor {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else {
            throw ChildProcessError(.descriptorFailed, program: program, operation: "duplicate descriptor \(descriptor)", errorNumber: errno)
        }
        return OwnedDescriptor(taking: copy)
    }

    /// Renumbers a descriptor below 3 (possible when this process runs with a standard stream closed) to a
    /// close-on-exec one at 3 or above.
    private func moveAboveStandardStreams(program: String) throws(ChildProcessError) {
        let current = rawValue
        guard current >= 0 && current < 3 else { return }
        let copy = fcntl(current, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else { throw ChildProcessError(.descriptorFailed, program: program, operation: "fcntl F_DUPFD_CLOEXEC", errorNumber: errno) }
        number.withLock { $0 = copy }
        _ = Glibc.close(current)
    }

    /// Reads what is there now, up to `count` bytes, waiting until at least one byte is (or end of file).
    /// - Returns: the bytes; empty at end of file, once closed, or on a read error.
    package func read(upTo count: Int) -> [UInt8] {
        let descriptor = rawValue
        guard descriptor >= 0, count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { buffer -> Int in
            var result: Int
            repeat { result = Glibc.read(descriptor, buffer.baseAddress, buffer.count) } while result < 0 && errno == EINTR
            return result
        }
        guard got > 0 else { return [] }
        bytes.removeLast(count - got)
        return bytes
    }

    /// Reads until end of file.
    /// - Parameter limit: the most bytes kept; the rest is read and dropped (so the writer never blocks).
    package func readToEnd(keeping limit: Int = .max) -> [UInt8] {
        var all: [UInt8] = []
        while case let chunk = read(upTo: 16_384), !chunk.isEmpty {
            if all.count < limit { all.append(contentsOf: chunk.prefix(limit - all.count)) }
        }
        return all
    }

    /// Writes all of `bytes`, retrying partial writes and `EINTR`.
    /// - Throws: ``ChildProcessError/Code/descriptorFailed`` with `errno` (e.g. `EPIPE` once the reader
    ///   has gone; a thread that writes to a pipe blocks SIGPIPE first, or the process receives it).
    package func write(_ bytes: some Collection<UInt8>) throws(ChildProcessError) {
        let descriptor = rawValue
        guard descriptor >= 0 else { throw ChildProcessError(.descriptorFailed, program: "", operation: "write", errorNumber: EBADF) }
        let failure: Int32? = Array(bytes).withUnsafeBytes { buffer -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let failure { throw ChildProcessError(.descriptorFailed, program: "", operation: "write", errorNumber: failure) }
    }

    /// Closes the descriptor (once; later calls do nothing).
    package func close() {
        let descriptor = number.withLock { number -> Int32 in
            defer { number = -1 }
            return number
        }
        // Not retried on EINTR: on Linux the descriptor is released even then.
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    deinit { close() }
}
