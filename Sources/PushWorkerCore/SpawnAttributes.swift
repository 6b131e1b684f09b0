import Foundation
import Glibc

/// Owns a `posix_spawnattr_t` set up for a child of pushworker: its own process group (`POSIX_SPAWN_SETPGROUP`,
/// pgid 0, so a signal to `-pid` reaches it and every process it starts), an empty signal mask
/// (`POSIX_SPAWN_SETSIGMASK`) and the default action for every catchable signal (`POSIX_SPAWN_SETSIGDEF`):
/// whatever the spawning thread blocks and whatever pushworker catches or ignores (SIGTERM, SIGINT,
/// SIGPIPE), the program starts as if from a shell. Used by one thread, for one `posix_spawn`.
final class SpawnAttributes {
    let pointer: UnsafeMutablePointer<posix_spawnattr_t>

    /// - Throws: ``ChildProcessError/Code/setupFailed`` when glibc refuses one of the settings.
    init(program: String) throws(ChildProcessError) {
        pointer = .allocate(capacity: 1)
        let result = posix_spawnattr_init(pointer)
        guard result == 0 else {
            pointer.deallocate()
            throw ChildProcessError(.setupFailed, program: program, operation: "posix_spawnattr_init", errorNumber: result)
        }
        var none = sigset_t()
        sigemptyset(&none)
        var catchable = sigset_t()
        sigfillset(&catchable)
        sigdelset(&catchable, SIGKILL)
        sigdelset(&catchable, SIGSTOP)
        let flags = Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        for (operation, status) in [
            ("posix_spawnattr_setflags", posix_spawnattr_setflags(pointer, flags)),
            ("posix_spawnattr_setpgroup", posix_spawnattr_setpgroup(pointer, 0)),
            ("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(pointer, &none)),
            ("posix_spawnattr_setsigdefault", posix_spawnattr_setsigdefault(pointer, &catchable)),
        ] where status != 0 {
            throw ChildProcessError(.setupFailed, program: program, operation: operation, errorNumber: status)
        }
    }

    deinit {
        posix_spawnattr_destroy(pointer)
        pointer.deallocate()
    }
}
