import PushWorker
import Synchronization

/// One run of ``PushWorkerCommandLine/runService(_:alongside:)``: the service's task, the companions' task,
/// how a stop began, and the first error.
final class CompanionRun: Sendable {
    private struct State {
        /// Whether a stop has begun (a signal, a companion ending, the service ending).
        var stopping = false
        /// The first error, the one that is rethrown.
        var error: (any Error)?
    }

    /// The state, in a box of its own so the companions' task can hold it before `self` is complete.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let service: PushWorkerService
    private let serviceTask: Task<Void, any Error>
    private let companionsTask: Task<Void, Never>

    /// Starts the service and the companions.
    init(service: PushWorkerService, companions: [@Sendable () async throws -> Void]) {
        self.service = service
        let shared = self.shared
        serviceTask = Task { try await service.run() }
        companionsTask = Task {
            await withTaskGroup(of: (Int, (any Error)?).self) { group in
                for (index, companion) in companions.enumerated() {
                    group.addTask {
                        do {
                            try await companion()
                            return (index, nil)
                        } catch {
                            return (index, error)
                        }
                    }
                }
                for await (index, error) in group {
                    let beganTheStop = shared.state.withLock { state -> Bool in
                        let wasStopping = state.stopping
                        state.stopping = true
                        if let error {
                            // A companion cancelled by the stop may say so; anything else is a failure.
                            if !(wasStopping && error is CancellationError) && state.error == nil { state.error = error }
                        } else if !wasStopping && state.error == nil {
                            state.error = CommandLineError(.failure, "pushworker: companion \(index) returned before a stop; stopping the service")
                        }
                        return !wasStopping
                    }
                    if beganTheStop {
                        // The first companion to end ends the others, and the service (gracefully).
                        service.shutdown()
                        group.cancelAll()
                    }
                }
            }
        }
    }

    /// The first signal: the service stops gracefully, the companions are cancelled.
    func stopGracefully() {
        shared.state.withLock { $0.stopping = true }
        service.shutdown()
        companionsTask.cancel()
    }

    /// The second signal, or the caller's cancellation: the service stops fast, the companions are cancelled.
    func stopNow() {
        shared.state.withLock { $0.stopping = true }
        serviceTask.cancel()
        companionsTask.cancel()
    }

    /// Waits for the service and every companion to end.
    /// - Throws: the first error (see ``PushWorkerCommandLine/runService(_:alongside:)``).
    func wait() async throws {
        let serviceError: (any Error)?
        do {
            try await serviceTask.value
            serviceError = nil
        } catch {
            serviceError = error
        }
        // The service has ended: if nothing stopped it, the companions have nothing to run beside.
        shared.state.withLock { state in
            if let serviceError, state.error == nil { state.error = serviceError }
            state.stopping = true
        }
        companionsTask.cancel()
        await companionsTask.value
        if let error = shared.state.withLock({ $0.error }) { throw error }
    }
}
