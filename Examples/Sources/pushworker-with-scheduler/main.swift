// pushworker-with-scheduler: the pushworker service beside a service of the application's own (a
// Scheduler that ticks every second) in one process, under one handling of SIGTERM and SIGINT:
//   - the first signal stops the service gracefully (running jobs finish or reach their deadline) and
//     cancels the scheduler;
//   - a second signal stops the service fast (running jobs are cut short without a result; their records
//     are read again); a third exits at once with 130.
//
// Usage: pushworker-with-scheduler [CONFIG.json5]   (default: $PUSHWORKER_CONFIG, else built-in defaults)
import Foundation
import PushWorkerCLI
import PushWorkerCore
import PushWorker

// First, before any await: SIGTERM/SIGINT caught, so a signal during start-up is kept for runService.
PushWorkerCommandLine.prepareProcess()
let environment = ProcessInfo.processInfo.environment
do {
    let path = CommandLine.arguments.dropFirst().first ?? environment["PUSHWORKER_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
    let configuration = try ServiceConfiguration.load(path: path, environment: environment)
    PushWorkerLogger.bootstrap(level: configuration.logLevel, format: configuration.logFormat)
    let service = PushWorkerService(configuration: configuration)
    try await PushWorkerCommandLine.runService(service, alongside: [
        { await Scheduler().run() },
    ])
    exit(0)
} catch {
    FileHandle.standardError.write(Data("pushworker-with-scheduler: \(error)\n".utf8))
    exit(1)
}
