import Foundation
import Glibc

/// Owns a `posix_spawn_file_actions_t`: what the child does with its descriptors (and its working
/// directory) between `fork` and `exec`, in the order added. Used by one thread, for one `posix_spawn`.
final class SpawnFileActions {
    let pointer: UnsafeMutablePointer<posix_spawn_file_actions_t>
    private let program: String

    /// - Throws: ``ChildProcessError/Code/setupFailed`` when glibc cannot allocate it.
    init(program: String) throws(ChildProcessError) {
        self.program = program
        pointer = .allocate(capacity: 1)
        let result = posix_spawn_file_actions_init(pointer)
        guard result == 0 else {
            pointer.deallocate()
            throw ChildProcessError(.setupFailed, program: program, operation: "posix_spawn_file_actions_init", errorNumber: result)
        }
    }

    /// The child's `dup2(source, target)` (which clears close-on-exec on `target`).
    func duplicate(_ source: Int32, to target: Int32) throws(ChildProcessError) {
        try check(posix_spawn_file_actions_adddup2(pointer, source, target), "posix_spawn_file_actions_adddup2")
    }

    /// The child's `close(descriptor)` (glibc ignores the error of a descriptor that is already closed).
    func close(_ descriptor: Int32) throws(ChildProcessError) {
        try check(posix_spawn_file_actions_addclose(pointer, descriptor), "posix_spawn_file_actions_addclose")
    }

    /// The child's `closefrom(lowest)`, or `false` when this glibc has no
    /// `posix_spawn_file_actions_addclosefrom_np` (before 2.34).
    func closeFrom(_ lowest: Int32) throws(ChildProcessError) -> Bool {
        guard let addClosefrom = GlibcExtensions.addClosefrom else { return false }
        try check(addClosefrom(pointer, lowest), "posix_spawn_file_actions_addclosefrom_np")
        return true
    }

    /// The child's `chdir(path)`.
    /// - Throws: ``ChildProcessError/Code/workingDirectoryUnsupported`` when this glibc has no
    ///   `posix_spawn_file_actions_addchdir_np` (before 2.29): the program is not started in the wrong
    ///   directory.
    func changeDirectory(to path: String) throws(ChildProcessError) {
        guard let addChdir = GlibcExtensions.addChdir else {
            throw ChildProcessError(.workingDirectoryUnsupported, program: program,
                                    operation: "working directory \(path): this C library has no posix_spawn_file_actions_addchdir_np (glibc 2.29 or later needed)")
        }
        try check(path.withCString { addChdir(pointer, $0) }, "posix_spawn_file_actions_addchdir_np")
    }

    private func check(_ result: Int32, _ operation: String) throws(ChildProcessError) {
        guard result == 0 else { throw ChildProcessError(.setupFailed, program: program, operation: operation, errorNumber: result) }
    }

    deinit {
        posix_spawn_file_actions_destroy(pointer)
        pointer.deallocate()
    }
}
