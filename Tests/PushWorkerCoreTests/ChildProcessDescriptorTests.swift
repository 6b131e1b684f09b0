import Foundation
import Synchronization
import Testing
@testable import PushWorkerCore

/// The crash of Foundation's `Process.run()` on Linux (swift-corelibs-foundation before PR #5472): to close
/// the child's descriptors it lists `/proc/self/fd` and copies each entry's 256-byte `d_name` by value,
/// reading past glibc's 32 KiB `readdir` buffer when the entry sits near its end: a SIGSEGV when the
/// next page is unmapped, a heap-buffer-overflow report under AddressSanitizer every time. Each entry takes
/// 24 bytes, so the last one comes within 256 bytes of the buffer's end from about 1330 entries on, and
/// past about 1365 they fill it: the test spawns at every count from 1300 to 1450 extra descriptors (and
/// at every 25th below), in both ways ChildProcess closes descriptors.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ChildProcessDescriptorTests {
    static let counts = Array(stride(from: 0, to: 1300, by: 25)) + Array(1300...1450)
    static let extraDescriptors = counts.last ?? 0

    /// Opens descriptors up to each of ``counts`` and spawns `start()` at each count, on a thread of its own;
    /// at every `sample`th count the child lists its descriptors (`start(true)`).
    /// - Returns: what went wrong (empty when nothing did).
    /// The extra descriptors are not close-on-exec, so each one the child's set-up misses reaches the child.
    /// - Parameter exact: whether the child's list must be exactly 0, 1, 2 and 3 (`ls`'s own), or only hold
    ///   none of the extra descriptors (the `/proc/self/fd` listing cannot close what another test's thread
    ///   opens, without close-on-exec, between the listing and the spawn).
    static func spawnAtEveryDescriptorCount(every sample: Int = 50, exact: Bool = true,
                                            _ start: @escaping @Sendable (_ listDescriptors: Bool) throws -> (Int32, String)) async -> [String] {
        await onThread {
            var opened: [Int32] = []
            defer { for descriptor in opened { close(descriptor) } }
            var problems: [String] = []
            for count in counts {
                while opened.count < count {
                    let descriptor = open("/dev/null", O_RDONLY)
                    guard descriptor >= 0 else { return ["open failed at \(opened.count): errno \(errno)"] }
                    opened.append(descriptor)
                }
                do {
                    let (status, output) = try start(count % sample == 0)
                    if status != 0 { problems.append("\(count) extra descriptors: status \(status)") }
                    // Now and then the child lists its own descriptors: still only 0, 1, 2 (and 3, ls's own).
                    if count % sample == 0 {
                        let seen = output.split(separator: "\n").compactMap { Int32($0) }
                        let leaked = exact ? seen.count != 4 || seen.prefix(4) != [0, 1, 2, 3] : !Set(seen).isDisjoint(with: opened)
                        if leaked { problems.append("\(count) extra descriptors: the child had \(seen)") }
                    }
                } catch {
                    problems.append("\(count) extra descriptors: \(error)")
                }
                if problems.count > 5 { break }
            }
            if (OpenDescriptors.list()?.count ?? 0) <= extraDescriptors { problems.append("the descriptors were not all open at the end") }
            return problems
        }
    }

    /// Waits for `child` from a thread outside the cooperative pool.
    static func blockingWait(_ child: ChildProcess) -> ChildProcessTermination {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<ChildProcessTermination?>(nil)
        Task {
            let termination = await child.waitForExit()
            result.withLock { $0 = termination }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .unknown(errno: 0)
    }

    @Test("a spawn at every descriptor count, /proc/self/fd read in place", arguments: [ChildProcess.DescriptorClosing.listing, .automatic])
    func spawnAtEveryDescriptorCount(_ closing: ChildProcess.DescriptorClosing) async {
        let problems = await Self.spawnAtEveryDescriptorCount(exact: closing == .automatic) { listDescriptors in
            let child = try ChildProcess(program: listDescriptors ? "/bin/ls" : "/bin/true", arguments: listDescriptors ? ["-1", "/proc/self/fd"] : [],
                                         environment: [:], stdin: .nullDevice, stdout: listDescriptors ? .pipe : .nullDevice, stderr: .nullDevice,
                                         closing: closing)
            let output = child.stdout.map { reader in
                defer { reader.close() }
                return String(decoding: reader.readToEnd(), as: UTF8.self)
            } ?? "0\n1\n2\n3\n"
            let termination = Self.blockingWait(child)
            return (termination.exitStatus ?? 128 + (termination.signal ?? 0), output)
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func theListingReadsEveryDescriptor() async {
        // The listing itself, at a count that spreads /proc/self/fd over two readdir buffers.
        let listed = await onThread { () -> (missing: [Int32], extra: Int) in
            var opened: [Int32] = []
            defer { for descriptor in opened { close(descriptor) } }
            for _ in 0..<2000 { opened.append(open("/dev/null", O_RDONLY | O_CLOEXEC)) }
            let list = Set(OpenDescriptors.list() ?? [])
            return (opened.filter { !list.contains($0) }, list.count - opened.count)
        }
        #expect(listed.missing.isEmpty, "descriptors not listed: \(listed.missing.prefix(20))")
        #expect(listed.extra >= 3, "0, 1 and 2 are listed too")
    }

    /// The same loop with Foundation's `Process` (opt-in: `PUSHWORKER_REPRODUCE_FOUNDATION_PROCESS_CRASH=1`).
    /// On Swift 6.3.1 it crashes the test process: under AddressSanitizer every time (heap-buffer-overflow,
    /// READ of size 256 in `findMaximumOpenFromProcSelfFD`, at about 1330 extra descriptors), otherwise
    /// now and then (SIGSEGV in `__memcpy_avx512_unaligned_erms`). It passes once the toolchain has the fix.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PUSHWORKER_REPRODUCE_FOUNDATION_PROCESS_CRASH"] == "1"))
    func foundationProcessAtEveryDescriptorCount() async {
        let problems = await Self.spawnAtEveryDescriptorCount(every: Self.extraDescriptors + 1) { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.run()
            process.waitUntilExit()
            return (process.terminationStatus, "0\n1\n2\n3\n")
        }
        #expect(problems.isEmpty, "\(problems)")
    }
}
