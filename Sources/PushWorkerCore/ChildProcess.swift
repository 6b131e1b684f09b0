import Foundation
import Glibc

/// A program started with `posix_spawn`, for the exec worker and the testing kit (instead of Foundation's
/// `Process`, whose `run()` on Linux could crash the calling process: it copied each `/proc/self/fd` entry's
/// 256-byte `d_name` by value, reading past glibc's `readdir` buffer; swift-corelibs-foundation PR #5472).
///
/// The child:
/// - runs `program` (a name without `/` is looked up in `PATH`, see ``resolve(_:path:)``) with `argv[0]`
///   its resolved path, then `arguments`, and exactly `environment`;
/// - starts in `workingDirectory` (`posix_spawn_file_actions_addchdir_np`, glibc ≥ 2.29; without it a
///   working directory is refused with ``ChildProcessError/Code/workingDirectoryUnsupported``);
/// - gets stdin, stdout and stderr as asked (``Stream``); every other descriptor is closed
///   (`posix_spawn_file_actions_addclosefrom_np(3)`, glibc ≥ 2.34; else a close for each entry of
///   `/proc/self/fd`, see ``DescriptorClosing``);
/// - leads a process group of its own (so ``signalGroup(_:)`` reaches the programs it starts), with an
///   empty signal mask and every catchable signal at its default action, whatever this process blocks,
///   catches or ignores.
///
/// Its end is awaited by `waitpid` on a thread of its own (``waitForExit()``, ``termination``). Releasing
/// the value neither kills nor forgets the child: the waiting thread still reaps it.
package final class ChildProcess: Sendable {
    /// What one of the child's standard streams (0, 1, 2) is.
    package enum Stream: Sendable, Equatable {
        /// This process's own descriptor of the same number (when it is closed here, it is closed in the
        /// child too).
        case inherit
        /// `/dev/null`, for reading and writing.
        case nullDevice
        /// A new pipe: this process gets the other end (``ChildProcess/stdin`` to write,
        /// ``ChildProcess/stdout`` or ``ChildProcess/stderr`` to read).
        case pipe
        /// A duplicate of this descriptor of this process (which stays the caller's to close), e.g. an open
        /// log file or the write end of a pipe shared by stdout and stderr.
        case descriptor(Int32)
    }

    /// How the child's descriptors above 2 are closed.
    package enum DescriptorClosing: Sendable {
        /// `posix_spawn_file_actions_addclosefrom_np(3)` where glibc has it (2.34 and later), else
        /// ``listing``.
        case automatic
        /// One close action for each descriptor listed in `/proc/self/fd` just before the spawn (each name
        /// read in place, never copied past its record). A descriptor another thread opens between the
        /// listing and the spawn without close-on-exec could reach the child.
        case listing
    }

    /// The child's process id (also its process group id).
    package let pid: pid_t
    /// The program's resolved path (`argv[0]`).
    package let program: String
    /// The write end of the child's stdin pipe (close it to give the child end of file), or `nil` unless
    /// stdin is ``Stream/pipe``.
    package let stdin: OwnedDescriptor?
    /// The read end of the child's stdout pipe, or `nil` unless stdout is ``Stream/pipe``.
    package let stdout: OwnedDescriptor?
    /// The read end of the child's stderr pipe, or `nil` unless stderr is ``Stream/pipe``.
    package let stderr: OwnedDescriptor?
    private let watch: ChildExitWatch

    /// Starts `program`. A spawn that fails with `ETXTBSY` (the file is open for writing, often only for a
    /// moment) is retried for up to about 60 ms.
    /// - Parameters:
    ///   - program: a path, or a name without `/` looked up in `searchPath`.
    ///   - arguments: the arguments after `argv[0]`.
    ///   - environment: the child's whole environment (nothing is inherited).
    ///   - workingDirectory: the child's working directory, or `nil` for this process's.
    ///   - stdin: the child's descriptor 0 (default a pipe).
    ///   - stdout: the child's descriptor 1 (default a pipe).
    ///   - stderr: the child's descriptor 2 (default a pipe).
    ///   - closing: how the child's other descriptors are closed (default ``DescriptorClosing/automatic``).
    ///   - searchPath: the `PATH` a bare name is looked up in (default this process's).
    /// - Throws: ``ChildProcessError``: `programNotFound`, `invalidArgument` (a NUL byte in a value, an
    ///   environment name that is empty or holds `=`), `descriptorFailed`, `workingDirectoryUnsupported`,
    ///   `descriptorListFailed`, `setupFailed`, `spawnFailed` (with the error number `posix_spawn` gave,
    ///   e.g. `EACCES`, or `ENOENT` for a missing working directory).
    package init(
        program: String, arguments: [String], environment: [String: String], workingDirectory: String? = nil,
        stdin: Stream = .pipe, stdout: Stream = .pipe, stderr: Stream = .pipe, closing: DescriptorClosing = .automatic,
        searchPath: String? = ProcessInfo.processInfo.environment["PATH"]
    ) throws(ChildProcessError) {
        guard let resolved = Self.resolve(program, path: searchPath) else {
            throw ChildProcessError(.programNotFound, program: program, operation: "not found or not executable")
        }
        // Relative to this process's working directory, as it was checked, not to the child's.
        let path = resolved.hasPrefix("/") ? resolved : FileManager.default.currentDirectoryPath + "/" + resolved
        let argv = [path] + arguments
        if let bad = argv.first(where: { $0.utf8.contains(0) }) {
            throw ChildProcessError(.invalidArgument, program: path, operation: "argument \(bad.debugDescription) holds a NUL byte")
        }
        for (name, value) in environment {
            guard !name.isEmpty, !name.utf8.contains(0x3D), !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw ChildProcessError(.invalidArgument, program: path,
                                        operation: "environment variable \(name.debugDescription) is empty, holds '=' or holds a NUL byte")
            }
        }
        if let workingDirectory, workingDirectory.utf8.contains(0) {
            throw ChildProcessError(.invalidArgument, program: path, operation: "working directory \(workingDirectory.debugDescription) holds a NUL byte")
        }
        let envp = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }

        let actions = try SpawnFileActions(program: path)
        let attributes = try SpawnAttributes(program: path)
        var parentEnds: [OwnedDescriptor?] = [nil, nil, nil]
        // The child's ends, held open until posix_spawn has duplicated them; all close-on-exec and ≥ 3.
        var childEnds: [OwnedDescriptor] = []
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            let childEnd: OwnedDescriptor
            switch stream {
            case .inherit:
                continue
            case .nullDevice:
                childEnd = try OwnedDescriptor.nullDevice(for: path)
            case let .descriptor(descriptor):
                childEnd = try OwnedDescriptor.duplicate(descriptor, for: path)
            case .pipe:
                let (read, write) = try OwnedDescriptor.pipe(for: path)
                childEnd = target == 0 ? read : write
                parentEnds[Int(target)] = target == 0 ? write : read
            }
            childEnds.append(childEnd)
            try actions.duplicate(childEnd.rawValue, to: target)
        }
        if let workingDirectory { try actions.changeDirectory(to: workingDirectory) }
        let closedFrom = closing == .automatic ? try actions.closeFrom(3) : false
        if !closedFrom {
            guard let open = OpenDescriptors.list() else {
                throw ChildProcessError(.descriptorListFailed, program: path, operation: "read /proc/self/fd", errorNumber: errno)
            }
            for descriptor in open where descriptor >= 3 { try actions.close(descriptor) }
        }

        let arguments = try CStringArray(argv, program: path)
        let variables = try CStringArray(envp, program: path)
        var child: pid_t = 0
        var result: Int32 = 0
        // ETXTBSY: the program file is open for writing somewhere, e.g. in a child another thread has just
        // forked (it holds a copy of every descriptor until its own exec) while the file was being written
        // here. That passes within moments: retry a few times (1 + 2 + … + 32 ms at most) before failing.
        for retry in 0...6 {
            // Under the spawn gate: a socket closed and re-bound meanwhile (SpawnGate) never lives on in this child.
            result = SpawnGate.starting {
                arguments.withArray { argv in
                    variables.withArray { envp in
                        posix_spawn(&child, path, actions.pointer, attributes.pointer, argv, envp)
                    }
                }
            }
            guard result == ETXTBSY, retry < 6 else { break }
            usleep(useconds_t(1000 << retry))
        }
        for end in childEnds { end.close() }
        guard result == 0 else {
            let operation = workingDirectory.map { "posix_spawn (working directory \($0))" } ?? "posix_spawn"
            throw ChildProcessError(.spawnFailed, program: path, operation: operation, errorNumber: result)
        }
        self.pid = child
        self.program = path
        self.stdin = parentEnds[0]
        self.stdout = parentEnds[1]
        self.stderr = parentEnds[2]
        watch = ChildExitWatch(pid: child)
        watch.start()
    }

    /// Finds `program` in `path` (`:`-separated; default `/usr/local/bin:/usr/bin:/bin` when `nil`), or
    /// returns it as is when it contains `/`; only an executable file counts.
    /// - Returns: the path, or `nil` when there is none.
    package static func resolve(_ program: String, path: String?) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        guard !program.isEmpty else { return nil }
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// How the child ended, or `nil` while it runs.
    package var termination: ChildProcessTermination? { watch.termination }

    /// Whether the child still runs (or has ended but is not reaped yet).
    package var isRunning: Bool { watch.termination == nil }

    /// Waits until the child has ended, without holding a thread of the cooperative pool.
    /// - Returns: how it ended.
    package func waitForExit() async -> ChildProcessTermination { await watch.wait() }

    /// Sends `signal` to the child alone, unless it has ended and been reaped.
    /// - Returns: whether it was sent.
    @discardableResult
    package func signal(_ signal: Int32) -> Bool { watch.signal(signal) }

    /// Sends `signal` to the child's process group: the child and the programs it started (which keep the
    /// group, and so receive it, even after the child itself has ended).
    /// - Returns: whether it was sent (`false` once the group is empty).
    @discardableResult
    package func signalGroup(_ signal: Int32) -> Bool { kill(-pid, signal) == 0 }
}
