/// How a ``ChildProcess`` ended, read from its `waitpid` status.
package enum ChildProcessTermination: Sendable, Equatable, CustomStringConvertible {
    /// It exited by itself (or by `exit`) with this status, 0…255.
    case exited(Int32)
    /// A signal it did not catch ended it (e.g. `SIGKILL`, 9).
    case signaled(Int32)
    /// Its status could not be read: `waitpid` failed with this `errno` (e.g. `ECHILD` when SIGCHLD is
    /// ignored, so the kernel reaped it at once).
    case unknown(errno: Int32)

    /// Decodes a `waitpid` status word as glibc's `WIFEXITED`/`WEXITSTATUS`/`WIFSIGNALED`/`WTERMSIG`
    /// macros do (they are not imported into Swift): the low 7 bits are 0 for an exit (the status is in
    /// bits 8…15), the signal number for a death by signal, 0x7F for a stopped child.
    /// - Returns: `nil` for a stopped or continued child (not an end).
    package init?(waitStatus status: Int32) {
        let low = status & 0x7F
        if low == 0 {
            self = .exited((status >> 8) & 0xFF)
        } else if low != 0x7F && status != 0xFFFF {
            self = .signaled(low)
        } else {
            return nil
        }
    }

    /// The exit status, or `nil` when it did not exit by itself.
    package var exitStatus: Int32? {
        if case let .exited(status) = self { return status }
        return nil
    }

    /// The signal that ended it, or `nil` when it exited by itself.
    package var signal: Int32? {
        if case let .signaled(signal) = self { return signal }
        return nil
    }

    /// E.g. `exit status 3`, `killed by signal 9`.
    package var description: String {
        switch self {
        case let .exited(status): "exit status \(status)"
        case let .signaled(signal): "killed by signal \(signal)"
        case let .unknown(errno): "exit status unknown (waitpid errno \(errno))"
        }
    }
}
