import Foundation

/// Why a ``ChildProcess`` could not be started, with the program and the system's reason.
package struct ChildProcessError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `programNotFound`.
        package let name: String
        private init(_ name: String) { self.name = name }
        package var description: String { name }

        /// The program is not an executable file, or a bare name not found in `PATH`.
        package static let programNotFound = Code("programNotFound")
        /// An argument, environment name or value, or the working directory holds a NUL byte (C strings
        /// end there, so the program would see it cut), or an environment name is empty or holds `=`.
        package static let invalidArgument = Code("invalidArgument")
        /// A pipe or a descriptor for the child's standard streams could not be made (`pipe2`, `open`,
        /// `fcntl`).
        package static let descriptorFailed = Code("descriptorFailed")
        /// A working directory was asked for, but this C library has no
        /// `posix_spawn_file_actions_addchdir_np` (glibc before 2.29).
        package static let workingDirectoryUnsupported = Code("workingDirectoryUnsupported")
        /// `/proc/self/fd` could not be read to close the child's other descriptors (only where the C
        /// library has no `posix_spawn_file_actions_addclosefrom_np`, glibc before 2.34).
        package static let descriptorListFailed = Code("descriptorListFailed")
        /// Preparing `posix_spawn` failed (its attributes or file actions).
        package static let setupFailed = Code("setupFailed")
        /// `posix_spawn` failed: e.g. the program is not executable (`EACCES`), not a program the kernel
        /// runs (`ENOEXEC`), or the working directory does not exist (`ENOENT`).
        package static let spawnFailed = Code("spawnFailed")
    }

    /// The kind of failure.
    package var code: Code
    /// The program that was to be started (as given, or as resolved from `PATH`).
    package var program: String
    /// The `errno` value (or the error number `posix_spawn` returned), when the system gave one.
    package var errorNumber: Int32?
    /// What was being done, e.g. `posix_spawn` or `working directory`.
    package var operation: String

    /// Creates an error.
    package init(_ code: Code, program: String, operation: String, errorNumber: Int32? = nil) {
        self.code = code
        self.program = program
        self.operation = operation
        self.errorNumber = errorNumber
    }

    /// E.g. `cannot start /bin/x: posix_spawn: Permission denied (errno 13, spawnFailed)`; for a failed
    /// write to a child's pipe (no program named), e.g. `write: Broken pipe (errno 32, descriptorFailed)`.
    package var description: String {
        var text = program.isEmpty ? operation : "cannot start \(program): \(operation)"
        if let errorNumber {
            text += ": \(String(cString: strerror(errorNumber))) (errno \(errorNumber), \(code))"  // NUL-safe: libc's own message text
        } else {
            text += " (\(code))"
        }
        return text
    }
}
