import PushWorker
import Synchronization

extension PushWorkerCommandLine {
    /// Runs `service` beside the application's own long-running async work (an HTTP API, a scheduler: its
    /// *companions*) under pushworker's one handling of SIGTERM and SIGINT, and returns once all of them
    /// have stopped.
    ///
    /// ```swift
    /// PushWorkerCommandLine.prepareProcess()   // first, before any await
    /// let service = PushWorkerService(configuration: configuration, registry: registry)
    /// try await PushWorkerCommandLine.runService(service, alongside: [
    ///     { try await apiServer.run() },        // must return (or throw) when its task is cancelled
    ///     { try await scheduler.run() },
    /// ])
    /// ```
    ///
    /// - The first SIGTERM or SIGINT stops the service gracefully (``PushWorkerService/shutdown()``: running
    ///   jobs finish or reach their deadline) and cancels the companions' tasks.
    /// - A second signal stops the service fast (its task is cancelled: running jobs are cut short without a
    ///   result; see ``PushWorkerService/run()``); a third exits the process at once with status 130.
    /// - A companion that throws, or returns before a stop, stops everything: the service gracefully, the
    ///   other companions by cancellation; then the error is rethrown (for an early return, a
    ///   ``CommandLineError`` naming the companion by its position in `companions`, from 0).
    /// - When the service stops by itself (``PushWorkerService/run()`` returned or threw, e.g. a fatal Kafka
    ///   error), the companions are cancelled, and its error is rethrown.
    /// - Cancelling the task that calls this cancels the service's task (the fast stop) and the companions'.
    ///
    /// Errors thrown after a stop began are rethrown too, except `CancellationError`; when several fail,
    /// the first error wins (the one that caused the stop, if any).
    /// - Parameters:
    ///   - service: the service, not yet running.
    ///   - companions: the application's services; each runs in its own child task until it returns, throws
    ///     or is cancelled. May be empty.
    /// - Throws: the first error of the service or a companion, or ``CommandLineError`` (`.failure`) when a
    ///   companion returned before a stop.
    public static func runService(_ service: PushWorkerService, alongside companions: [@Sendable () async throws -> Void]) async throws {
        try await runService(service, alongside: companions) { onStop, onSecondSignal in
            SignalWatcher(onStop: onStop, onSecondSignal: onSecondSignal)
        }
    }

    /// ``runService(_:alongside:)`` with the signal source made by `watch` (tests pass their own): it is
    /// called once with the first- and second-signal actions and returns what keeps watching while alive.
    static func runService(
        _ service: PushWorkerService, alongside companions: [@Sendable () async throws -> Void],
        watch: (_ onStop: @escaping @Sendable () -> Void, _ onSecondSignal: @escaping @Sendable () -> Void) -> AnyObject
    ) async throws {
        let run = CompanionRun(service: service, companions: companions)
        let watcher = watch({ run.stopGracefully() }, { run.stopNow() })
        defer { withExtendedLifetime(watcher) {} }
        try await withTaskCancellationHandler {
            try await run.wait()
        } onCancel: {
            run.stopNow()
        }
    }
}
