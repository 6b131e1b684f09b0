// crashing-pushworker: pushworker's command line with one more worker type, `crash`, written in Swift for
// the crash guard's end-to-end tests (CrashGuardTests): a payload with `"crash":"fatalError"` calls
// fatalError(), one with `"crash":"memory"` allocates and touches memory until an allocation fails (run
// it under a limit: `prlimit --as=…`); any other payload gets newData.
import Foundation
import PushWorkerCLI
import PushWorkerCore

/// The test worker: crashes the process as its payload asks.
struct CrashingWorker: Worker {
    func perform(_ job: Job) async throws -> WorkerOutcome {
        let text = String(decoding: job.value, as: UTF8.self)
        if text.contains(#""crash":"fatalError""#) {
            fatalError("crashing-pushworker: the payload asked for fatalError")
        }
        if text.contains(#""crash":"memory""#) {
            var blocks: [UnsafeMutableRawPointer] = []
            while true {
                // 64 MiB at a time, each page written, until malloc fails under the limit.
                guard let block = malloc(64 << 20) else { fatalError("crashing-pushworker: out of memory after \(blocks.count * 64) MiB") }
                memset(block, 1, 64 << 20)
                blocks.append(block)
            }
        }
        return .newData
    }
}

PushWorkerCommandLine.prepareProcess()
let commandLine = PushWorkerCommandLine { registry, _ in
    registry.register(type: "crash", worker: CrashingWorker(), name: "swift:crash")
}
exit(await commandLine.main())
