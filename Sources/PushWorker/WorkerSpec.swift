import Foundation
import PushWorkerCore

/// A worker declared in the configuration for a payload `type` (contract section 6).
public struct WorkerSpec: Sendable, Equatable {
    /// What kind of worker and its settings.
    public enum Kind: Sendable, Equatable {
        /// Runs a program: `arguments[0]` is the program (looked up in `PATH` without a `/`), never a shell.
        /// At the deadline it gets SIGTERM, then SIGKILL after `terminationGrace` (file `terminationGraceMs`,
        /// in milliseconds; default 2 s), clamped to 0 … 2 147 483 647 ms (negative counts as zero).
        case exec(arguments: [String], environment: [String: String], workingDirectory: String?, terminationGrace: Duration)
        /// Returns `result` (with `reason`) after `delay` (file `delayMs`, in milliseconds; default zero),
        /// clamped to 0 … 2 147 483 647 ms (negative counts as zero); a `failed` marked `retryable` (file
        /// `retryable`, default false) is retried, for trying retries out.
        case noop(result: BackgroundFetchResult, reason: String?, delay: Duration, retryable: Bool = false)
        /// POSTs the record value to `url` with static `headers` (values from the configuration or, for
        /// secrets, from environment variables at startup), with its own request timeout `requestTimeout`
        /// (file `timeoutMs`, in milliseconds; default 30 s), clamped to 1 ms … 2 147 483 647 ms; the time
        /// left in the budget caps it.
        case http(url: URL, headers: [String: String], requestTimeout: Duration)
    }

    /// The worker kind and its settings.
    public var kind: Kind
    /// Its budget (file `budgetMs`, in milliseconds), or `nil` for the configuration's
    /// ``ServiceConfiguration/defaultBudget`` (30 s). Takes effect clamped to 1 ms … 2 147 483 647 ms (about
    /// 24.8 days), the range the file accepts: below 1 ms (zero, negative) counts as 1 ms.
    public var budget: Duration?
    /// The most of its jobs running at once, or `nil` for no limit of its own (`maxInFlight` still applies).
    public var maxConcurrent: Int?
    /// Its retry policy (file `retry`; keys left out come from the file's `retries`), or `nil` for the
    /// configuration's ``RetryConfiguration/policy``.
    public var retry: RetryPolicy?

    /// Creates a worker declaration.
    /// - Parameters:
    ///   - kind: the worker kind and its settings.
    ///   - budget: its budget, or `nil` (the default) for the configuration's ``ServiceConfiguration/defaultBudget``.
    ///   - maxConcurrent: the most of its jobs running at once, or `nil` (the default) for no limit of its own.
    public init(kind: Kind, budget: Duration? = nil, maxConcurrent: Int? = nil) {
        self.kind = kind
        self.budget = budget
        self.maxConcurrent = maxConcurrent
    }

    /// The kind's name as written in the configuration: `exec`, `noop` or `http`.
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

    /// Builds the worker, with its times clamped as ``Kind`` says.
    /// - Parameter withheldVariables: environment variables an exec worker's program does not inherit
    ///   (beside every `PUSHWORKER_*` one), e.g. ``ServiceConfiguration/secretVariables``.
    public func makeWorker(withholding withheldVariables: Set<String> = []) -> any Worker {
        switch kind {
        case .exec(let arguments, let environment, let workingDirectory, let grace):
            ExecWorker(arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                       terminationGrace: grace.asWaitSetting, withheldVariables: withheldVariables)
        case .noop(let result, let reason, let delay, let retryable):
            NoopWorker(outcome: WorkerOutcome(result, reason: reason.map { ResultReason($0) }, retryable: retryable), delay: delay.asWaitSetting)
        case .http(let url, let headers, let requestTimeout):
            HTTPWorker(url: url, headers: headers, requestTimeout: requestTimeout.asBudgetSetting)
        }
    }
}
