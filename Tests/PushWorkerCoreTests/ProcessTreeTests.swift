import Foundation
import Glibc
@testable import PushWorkerCore
import Testing

/// ``ProcessTree``: `/proc/PID/stat` read as the kernel writes it, and descendants found through their parents.
struct ProcessTreeTests {
    /// The name in parentheses may hold spaces and `)`: the fields are counted from the last `)`.
    @Test func aNameWithSpacesAndParenthesesDoesNotShiftTheFields() throws {
        let line = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 2000000 100 0 0 0"
        let parsed = try #require(ProcessTree.parse(Array(line.utf8), pid: 4242))
        #expect(parsed.parent == 17)
        #expect(parsed.entry == ProcessTree.Entry(pid: 4242, startTime: 987654, processGroup: 4242))
        #expect(ProcessTree.parse(Array("4242 (cut".utf8), pid: 4242) == nil)
        #expect(ProcessTree.parse(Array("4242 (short) S 1 2".utf8), pid: 4242) == nil)
    }

    /// A grandchild that left its parent's process group (`setsid`) is found, with its own group, and a signal
    /// reaches it only while its start time is the one listed.
    @Test func aDescendantOutsideTheGroupIsFoundAndSignalled() async throws {
        let child = try ChildProcess(program: "/bin/sh", arguments: ["-c", "setsid sleep 30 & wait $!"], environment: ["PATH": "/usr/bin:/bin"],
                                     stdin: .nullDevice, stdout: .nullDevice, stderr: .nullDevice)
        var found: ProcessTree.Entry?
        for _ in 0..<500 where found == nil {
            found = ProcessTree.descendants(of: child.pid).first { $0.processGroup != child.pid }
            if found == nil { try? await Task.sleep(for: .milliseconds(10)) }
        }
        let entry = try #require(found, "the setsid sleep among the shell's descendants")
        #expect(entry.processGroup == entry.pid, "setsid made it the leader of a group of its own")
        var stale = entry
        stale.startTime += 1
        #expect(!ProcessTree.signal(stale, SIGKILL), "another start time: not the listed process")
        #expect(ProcessTree.signal(entry, SIGKILL))
        // The shell's `wait $!` returns once the sleep has been killed, with 128 + 9.
        #expect(await child.waitForExit() == .exited(128 + SIGKILL))
    }
}
