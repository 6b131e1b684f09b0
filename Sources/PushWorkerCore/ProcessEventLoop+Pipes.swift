import CPushWorkerProcess
import Glibc
import Synchronization

extension ProcessEventLoop {
    /// Reads `descriptor` (made non-blocking) to its end on the loop's thread: `onData` with each chunk as it
    /// comes, then `onEnd` once, at end of file or on a read error; the descriptor is closed before `onEnd`.
    /// - Returns: `false` when the descriptor could not be watched (it is closed, and `onEnd` is called).
    @discardableResult
    func readToEnd(_ descriptor: OwnedDescriptor, onData: @escaping @Sendable ([UInt8]) -> Void, onEnd: @escaping @Sendable () -> Void) -> Bool {
        let number = descriptor.rawValue
        guard number >= 0, pw_set_nonblocking(number) == 0 else {
            descriptor.close()
            onEnd()
            return false
        }
        let added = add(number, events: PW_EPOLL_IN) { [self] _, token in
            // At most 256 KiB per turn, so one chatty program does not hold up the others' events.
            for _ in 0..<4 {
                let (chunk, ended) = Self.readReady(number)
                if !chunk.isEmpty { onData(chunk) }
                if ended {
                    remove(token, descriptor: number)
                    descriptor.close()
                    onEnd()
                    return
                }
                if chunk.isEmpty { return }
            }
        }
        guard added != nil else {
            descriptor.close()
            onEnd()
            return false
        }
        return true
    }

    /// Writes all of `bytes` to `descriptor` (made non-blocking) on the loop's thread as the pipe takes them,
    /// then closes it (the program reads end of file). A program that exits or closes its stdin first ends
    /// the write (EPIPE: SIGPIPE is blocked on the loop's thread); the rest is dropped.
    func writeAll(_ bytes: [UInt8], to descriptor: OwnedDescriptor) {
        let number = descriptor.rawValue
        guard number >= 0, !bytes.isEmpty, pw_set_nonblocking(number) == 0 else {
            descriptor.close()
            return
        }
        let written = Mutex(0)
        let added = add(number, events: PW_EPOLL_OUT) { [self] _, token in
            let done = written.withLock { offset -> Bool in
                while offset < bytes.count {
                    let result = bytes.withUnsafeBytes { buffer in
                        Glibc.write(number, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    }
                    if result > 0 {
                        offset += result
                    } else if result < 0 && errno == EINTR {
                        continue
                    } else if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                        return false
                    } else {
                        return true  // EPIPE or another error: the program does not read any more
                    }
                }
                return true
            }
            guard done else { return }
            remove(token, descriptor: number)
            descriptor.close()
        }
        if added == nil { descriptor.close() }
    }

    /// Reads what `descriptor` has now: the bytes, and whether it has ended (end of file or an error other
    /// than EAGAIN).
    private static func readReady(_ descriptor: Int32) -> (bytes: [UInt8], ended: Bool) {
        var bytes = [UInt8](repeating: 0, count: 65_536)
        var result: Int
        repeat {
            result = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        } while result < 0 && errno == EINTR
        if result > 0 {
            bytes.removeLast(bytes.count - result)
            return (bytes, false)
        }
        if result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return ([], false) }
        return ([], true)
    }
}
