import Foundation
import PushWorkerCLI

// First, before any await: standard descriptors and signals (see PushWorkerCommandLine.prepareProcess()).
PushWorkerCommandLine.prepareProcess()

/// The exit status, written once by the command's task before it signals `done`.
final class ExitStatus: @unchecked Sendable {
    // Written by the command's task before `done.signal()`, read by the main thread after `done.wait()`:
    // the semaphore orders the two accesses, so no lock is needed.
    var value: Int32 = 1
    let done = DispatchSemaphore(value: 0)
}

// The main thread waits on a semaphore rather than draining the main queue (an async top-level `await`
// runs `dispatch_main`): nothing in pushworker uses the main queue or the main actor, and a program that
// runs `dispatch_main` cannot be run under valgrind 3.19 (Debian 12's), which docs/performance.md uses to
// count instructions per record.
let status = ExitStatus()
Task.detached {
    status.value = await PushWorkerCommandLine().main()
    status.done.signal()
}
status.done.wait()
exit(status.value)
