import CPushWorkerProcess
import Foundation
import Glibc

/// The descendants of a program, read from `/proc`, so that the deadline reaches those that left its process
/// group (`setsid`, `setpgid`), which a signal to the group misses.
///
/// A process is named by its pid and its start time (field 22 of `/proc/PID/stat`, clock ticks since boot):
/// a pid the kernel has given to a new process since it was listed has another start time and is left alone.
/// Signals go through a pidfd opened after the start time was checked again, so they never reach a process
/// that took the number meanwhile.
package enum ProcessTree {
    /// One listed process.
    struct Entry: Equatable, Sendable {
        var pid: pid_t
        var startTime: UInt64
        var processGroup: pid_t
    }

    /// Every process whose chain of parents leads to `root` (not `root` itself), as `/proc` shows them now.
    static func descendants(of root: pid_t) -> [Entry] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var children: [pid_t: [Entry]] = [:]
        for name in names {
            guard let pid = pid_t(name), let (parent, entry) = stat(of: pid) else { continue }
            children[parent, default: []].append(entry)
        }
        var found: [Entry] = []
        var pending = [root]
        while let parent = pending.popLast() {
            for child in children[parent] ?? [] where !found.contains(where: { $0.pid == child.pid }) {
                found.append(child)
                pending.append(child.pid)
            }
        }
        return found
    }

    /// Sends `signal` to `entry` if it is still the process that was listed (same start time).
    /// - Returns: whether it was sent.
    @discardableResult
    static func signal(_ entry: Entry, _ number: Int32) -> Bool {
        let pidfd = pw_pidfd_open(entry.pid)
        guard pidfd >= 0 else { return false }
        defer { _ = Glibc.close(pidfd) }
        guard stat(of: entry.pid)?.entry.startTime == entry.startTime else { return false }
        return pw_pidfd_send_signal(pidfd, number) == 0
    }

    /// The parent and the entry of `pid`, from `/proc/PID/stat`, or `nil` when it is gone.
    static func stat(of pid: pid_t) -> (parent: pid_t, entry: Entry)? {
        guard let bytes = readProcFile("/proc/\(pid)/stat") else { return nil }
        return parse(bytes, pid: pid)
    }

    /// Reads a `/proc` file with `open` and `read` (it reports size 0, and Foundation's reader leaked its
    /// buffer for such files under LeakSanitizer): at most 64 KiB, or `nil` when it cannot be opened.
    package static func readProcFile(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { _ = Glibc.close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    /// Reads `/proc/PID/stat`: the name in parentheses may hold spaces and parentheses, so the fields are
    /// counted from the last `)`: state, ppid, pgrp, … and starttime is the 20th after it.
    static func parse(_ bytes: [UInt8], pid: pid_t) -> (parent: pid_t, entry: Entry)? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count > 19, let parent = pid_t(fields[1]), let group = pid_t(fields[2]), let start = UInt64(fields[19]) else { return nil }
        return (parent, Entry(pid: pid, startTime: start, processGroup: group))
    }
}
