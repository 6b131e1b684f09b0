import Dispatch
import Foundation
import PushWorkerCLI
import Synchronization

// First, before any await: standard descriptors and signals (see PushWorkerCommandLine.prepareProcess()).
PushWorkerCommandLine.prepareProcess()

/// The exit status, set by the command's task before it signals `done`.
final class ExitStatus: Sendable {
    /// An atomic, so that the write on the command's task and the read on the main thread are ordered
    /// for the sanitizers too (they do not see the semaphore's futex).
    let value = Atomic<Int32>(1)
    let done = DispatchSemaphore(value: 0)
}

// The main thread waits on a semaphore rather than draining the main queue (an async top-level `await`
// runs `dispatch_main`): nothing in pushworker uses the main queue or the main actor, and a program that
// runs `dispatch_main` cannot be run under valgrind 3.19 (Debian 12's), which docs/performance-profiling.md
// uses to count instructions per record.
let status = ExitStatus()
Task.detached {
    status.value.store(await PushWorkerCommandLine().main(), ordering: .releasing)
    status.done.signal()
}
status.done.wait()
exit(status.value.load(ordering: .acquiring))
