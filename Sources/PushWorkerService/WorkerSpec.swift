import Foundation
import PushWorkerCore

/// A worker declared in the configuration for a payload `type` (contract section 6).
public struct WorkerSpec: Sendable, Equatable {
    /// What kind of worker and its settings.
    public enum Kind: Sendable, Equatable {
        /// Runs a program: `arguments[0]` is the program (looked up in `PATH` without a `/`), never a shell.
        case exec(arguments: [String], environment: [String: String], workingDirectory: String?, terminationGraceMs: Int)
        /// Returns `result` (with `reason`) after `delayMs`.
        case noop(result: BackgroundFetchResult, reason: String?, delayMs: Int)
        /// POSTs the record value to `url` with static `headers` (values from the configuration or, for
        /// secrets, from environment variables at startup), with its own request timeout.
        case http(url: URL, headers: [String: String], timeoutMs: Int)
    }

    /// The worker kind and its settings.
    public var kind: Kind
    /// Its budget in milliseconds, or `nil` for the configuration's `defaultBudgetMs` (30 000).
    public var budgetMs: Int?
    /// The most of its jobs running at once, or `nil` for no limit of its own (`maxInFlight` still applies).
    public var maxConcurrent: Int?

    /// Creates a worker declaration.
    public init(kind: Kind, budgetMs: Int? = nil, maxConcurrent: Int? = nil) {
        self.kind = kind
        self.budgetMs = budgetMs
        self.maxConcurrent = maxConcurrent
    }

    /// The kind's name as written in the configuration: `exec` or `noop`.
    public var kindName: String {
        switch kind {
        case .exec: "exec"
        case .noop: "noop"
        case .http: "http"
        }
    }

    /// The worker's name in results (`worker`) when it serves `type`: `<kind>:<type>`, e.g. `exec:content-update`
    /// (`<kind>:default` for the default worker).
    public func registeredName(for type: String) -> String { "\(kindName):\(type)" }

    /// Builds the worker.
    /// - Parameter withheldVariables: environment variables an exec worker's program does not inherit
    ///   (beside every `PUSHWORKER_*` one), e.g. ``ServiceConfiguration/secretVariables``.
    public func makeWorker(withholding withheldVariables: Set<String> = []) -> any Worker {
        switch kind {
        case .exec(let arguments, let environment, let workingDirectory, let graceMs):
            ExecWorker(arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                       terminationGrace: .milliseconds(graceMs), withheldVariables: withheldVariables)
        case .noop(let result, let reason, let delayMs):
            NoopWorker(outcome: WorkerOutcome(result, reason: reason.map { ResultReason($0) }), delay: .milliseconds(delayMs))
        case .http(let url, let headers, let timeoutMs):
            HTTPWorker(url: url, headers: headers, requestTimeout: .milliseconds(timeoutMs))
        }
    }
}
