import Foundation
import PushWorkerCore

extension ServiceConfiguration {
    /// Reads one worker declaration (`workers.<type>` or `defaultWorker`); `headersFromEnv` values come from
    /// `environment` and their variable names are added to `secretVariables`.
    /// - Throws: ``ConfigurationError`` naming the key, unknown keys first.
    /// - Parameter retryBase: the policy a `retry` section's left-out keys come from (the file's `retries`).
    static func parseWorker(_ spec: inout ConfigReader, environment: [String: String], secretVariables: inout Set<String>, retryBase: RetryPolicy = .standard) throws -> WorkerSpec {
        guard let kind = try spec.string("kind") else {
            throw ConfigurationError(.invalidValue, key: spec.path + ".kind", "is required: exec, http or noop")
        }
        // Unknown keys first, so a misspelt key is named rather than a "required" key it was meant to be.
        let common: Set<String> = ["kind", "budgetMs", "maxConcurrent", "retry"]
        // nil for an unknown kind, refused below once the common keys are read.
        let known: Set<String>? = switch kind {
        case "exec": common.union(["command", "env", "workingDirectory", "terminationGraceMs"])
        case "noop": common.union(["result", "reason", "delayMs", "retryable"])
        case "http": common.union(["url", "headers", "headersFromEnv", "timeoutMs"])
        default: nil
        }
        if let known, let unknown = spec.keys.first(where: { !known.contains($0) }) {
            let hint = known.sorted().filter { $0 != "kind" }.joined(separator: ", ")
            throw ConfigurationError(.unknownKey, key: spec.path + ".\(unknown)", "is not a key of a \(kind) worker (known: \(hint))")
        }
        let budget = try spec.int("budgetMs", min: 1).map { Duration.milliseconds($0) }
        let maxConcurrent = try spec.int("maxConcurrent", min: 1)
        var result: WorkerSpec
        switch kind {
        case "exec":
            guard let command = try spec.stringList("command"), !command.isEmpty, !command[0].isEmpty else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".command", "is required for an exec worker: the program and its arguments, e.g. [\"./worker.sh\", \"--fast\"]")
            }
            let environment = try spec.stringMap("env") ?? [:]
            let workingDirectory = try spec.string("workingDirectory")
            let grace = try spec.int("terminationGraceMs", min: 0) ?? 2000
            result = WorkerSpec(kind: .exec(arguments: command, environment: environment, workingDirectory: workingDirectory, terminationGrace: .milliseconds(grace)), budget: budget)
        case "noop":
            let text = try spec.string("result") ?? "noData"
            guard let outcome = BackgroundFetchResult(rawValue: text) else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".result", "must be newData, noData or failed, got '\(text)'")
            }
            let reason = try spec.string("reason")
            let delay = try spec.int("delayMs", min: 0) ?? 0
            let retryable = try spec.bool("retryable") ?? false
            if retryable && outcome != .failed {
                throw ConfigurationError(.invalidValue, key: spec.path + ".retryable", "only a failed result is retried; set result: \"failed\" or remove retryable")
            }
            result = WorkerSpec(kind: .noop(result: outcome, reason: reason, delay: .milliseconds(delay), retryable: retryable), budget: budget)
        case "http":
            guard let text = try spec.string("url") else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".url", "is required for an http worker: an http:// or https:// URL")
            }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw ConfigurationError(.invalidValue, key: spec.path + ".url", "must be an http:// or https:// URL with a host, got '\(text)'")
            }
            var headers = try spec.stringMap("headers") ?? [:]
            for (header, variable) in try spec.stringMap("headersFromEnv") ?? [:] {
                secretVariables.insert(variable)
                guard let value = environment[variable] else {
                    throw ConfigurationError(.invalidValue, key: spec.path + ".headersFromEnv.\(header)", "the environment variable \(variable) is not set")
                }
                guard !value.isEmpty else {
                    throw ConfigurationError(.invalidValue, key: spec.path + ".headersFromEnv.\(header)", "the environment variable \(variable) is empty")
                }
                headers[header] = value
            }
            let timeoutMs = try spec.int("timeoutMs", min: 1) ?? 30_000
            result = WorkerSpec(kind: .http(url: url, headers: headers, requestTimeout: .milliseconds(timeoutMs)), budget: budget)
        default:
            throw ConfigurationError(.invalidValue, key: spec.path + ".kind", "unknown worker kind '\(kind)'; expected exec, http or noop")
        }
        result.maxConcurrent = maxConcurrent
        if var section = try spec.object("retry") {
            result.retry = try Self.parseRetryPolicy(&section, over: retryBase)
            try section.finish()
        }
        try spec.finish()
        return result
    }
}
