import Foundation
import PushWorkerCore
import PushWorkerKafka

extension ServiceConfiguration {
    /// Whether a librdkafka property holds a secret (its value is masked when printed).
    public static func isSecretProperty(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ["password", "secret", "sasl.oauthbearer.config", "ssl.key.pem", "ssl_key", "token"].contains { lowered.contains($0) }
    }

    /// The workers of `registry` that the configuration did not declare (a custom executable's Swift
    /// workers), by type: their result name, budget and concurrency limit.
    func swiftWorkers(in registry: WorkerRegistry) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for type in registry.types {
            guard let registered = registry.route(type: type) else { continue }
            if let spec = workers[type], registered.name == spec.registeredName(for: type) { continue }  // the configured one
            result[type] = .object([
                "worker": .string(registered.name), "budgetMs": .int(registered.budget.wholeMilliseconds),
                "maxConcurrent": registered.maxConcurrent.map { .int(Int64($0)) } ?? .null,
                "retry": registered.retry.map(Self.describe) ?? .null,
            ])
        }
        return result
    }

    /// The effective configuration as pretty JSON, with secret properties shown as `"*****"`.
    /// - Parameter registry: the workers `run` would use; when given, its Swift workers are listed under
    ///   `swiftWorkers` and `drainTimeoutMs` and `rebalanceDrainTimeoutMs` count their budgets.
    ///
    /// Times are printed under the file's keys in whole milliseconds (`defaultBudgetMs`, `budgetMs`,
    /// `terminationGraceMs`, …), as they take effect: clamped as ``defaultBudget``, ``WorkerSpec/budget``
    /// and ``WorkerSpec/Kind`` say, a sub-millisecond part dropped.
    public func effectiveDescription(registry: WorkerRegistry? = nil) -> String {
        func properties(_ configuration: KafkaConfiguration) -> JSONValue {
            .object(Dictionary(uniqueKeysWithValues: configuration.properties.map {
                ($0.name, JSONValue.string(Self.isSecretProperty($0.name) ? "*****" : $0.value))
            }))
        }
        func worker(_ spec: WorkerSpec) -> JSONValue {
            var members: [String: JSONValue] = ["kind": .string(spec.kindName), "budgetMs": .int((spec.budget ?? defaultBudget).asBudgetSetting.wholeMilliseconds)]
            members["maxConcurrent"] = spec.maxConcurrent.map { .int(Int64($0)) } ?? .null
            members["retry"] = spec.retry.map(Self.describe) ?? .null
            switch spec.kind {
            case .exec(let arguments, let environment, let workingDirectory, let grace):
                members["command"] = .array(arguments.map(JSONValue.string))
                members["env"] = .object(environment.mapValues { _ in .string("*****") })
                members["workingDirectory"] = workingDirectory.map(JSONValue.string) ?? .null
                members["terminationGraceMs"] = .int(grace.asWaitSetting.wholeMilliseconds)
            case .http(let url, let headers, let requestTimeout):
                members["url"] = .string(url.absoluteString)
                members["headers"] = .object(headers.mapValues { _ in .string("*****") })
                members["timeoutMs"] = .int(requestTimeout.asBudgetSetting.wholeMilliseconds)
            case .noop(let result, let reason, let delay, let retryable):
                members["result"] = .string(result.rawValue)
                members["retryable"] = .bool(retryable)
                members["reason"] = reason.map(JSONValue.string) ?? .null
                members["delayMs"] = .int(delay.asWaitSetting.wholeMilliseconds)
            }
            return .object(members)
        }
        // The transactional.id in effect once the mode is on (the host name's default shown resolved).
        let transactionalId: JSONValue = exactlyOnce.enabled
            ? .string(exactlyOnce.effectiveTransactionalId(groupId: groupId))
            : exactlyOnce.transactionalId.map(JSONValue.string) ?? .null
        let effectiveExactlyOnce: JSONValue = .object([
            "enabled": .bool(exactlyOnce.enabled), "transactionalId": transactionalId,
            "commitIntervalMs": .int(exactlyOnce.commitIntervalMs),
            "maxRecordsPerTransaction": .int(Int64(exactlyOnce.maxRecordsPerTransaction)),
        ])
        let root: JSONValue = .object([
            "kafka": properties(kafka),
            "consumer": properties(consumer),
            "producer": properties(producer),
            "effectiveConsumerProperties": properties(consumerProperties),
            "effectiveProducerProperties": properties(producerProperties),
            "groupId": .string(groupId),
            "inputTopics": .array(inputTopics.map(JSONValue.string)),
            "resultsTopic": .string(resultsTopic),
            "deadLetter": deadLetter.map { deadLetter in
                .object(["topic": .string(deadLetter.topic), "reasons": deadLetter.reasons.map { .array($0.map(JSONValue.string)) } ?? .null])
            } ?? .null,
            "collapse": .bool(collapse),
            "dedupe": dedupe.map { dedupe in
                .object(["windowMs": .int(dedupe.effectiveWindowMs), "maxEntries": .int(Int64(dedupe.effectiveMaxEntries))])
            } ?? .null,
            "exactlyOnce": effectiveExactlyOnce,
            "crashGuard": .object([
                "enabled": .bool(crashGuard.enabled), "deathLimit": .int(Int64(crashGuard.deathLimit)),
                "leaseRecords": .int(Int64(crashGuard.leaseRecords)), "group": .string(CrashGuard.groupId(for: groupId)),
            ]),
            "retries": .object([
                "enabled": .bool(retries.enabled), "topic": .string(retries.topic),
                "maxHoldMs": .int(retries.maxHold.wholeMilliseconds), "maxHeld": .int(Int64(retries.maxHeld)),
            ].merging(Self.describe(retries.policy).objectValue ?? [:]) { first, _ in first }),
            "maxInFlight": .int(Int64(maxInFlight)),
            "maxBufferedRecords": .int(Int64(maxBufferedRecords)),
            "maxPayloadBytes": .int(Int64(maxPayloadBytes)),
            "defaultBudgetMs": .int(defaultBudget.asBudgetSetting.wholeMilliseconds),
            "drainTimeoutMs": .int((registry.map { effectiveDrainTimeout(for: $0) } ?? effectiveDrainTimeout).wholeMilliseconds),
            "rebalanceDrainTimeoutMs": .int((registry.map { effectiveRebalanceDrainTimeout(for: $0) } ?? effectiveRebalanceDrainTimeout).wholeMilliseconds),
            "workers": .object(workers.mapValues(worker)),
            // Workers a custom executable registers in Swift (beside or in place of configured ones).
            "swiftWorkers": registry.map { .object(swiftWorkers(in: $0)) } ?? .null,
            "defaultWorker": defaultWorker.map(worker) ?? .null,
            "permittedTypes": permittedTypes.map { .array($0.map(JSONValue.string)) } ?? .null,
            "log": .object([
                "level": .string(logLevel.rawValue), "format": .string(logFormat.rawValue),
                "progressIntervalMs": .int(progressLogInterval.asWaitSetting.wholeMilliseconds),
                "unassignedWarningIntervalMs": .int(unassignedWarningInterval.asWaitSetting.wholeMilliseconds),
            ]),
            "dev": .object(["partitions": .int(Int64(devPartitions))]),
            "httpServer": .object([
                "enabled": .bool(httpServer.enabled), "host": .string(httpServer.host), "port": .int(Int64(httpServer.port)),
            ]),
            "statusPage": .object([
                "enabled": .bool(statusPage.enabled), "topic": .string(statusPage.topic),
                "publishIntervalMs": .int(statusPage.publishInterval.wholeMilliseconds),
                "sampleIntervalMs": .int(statusPage.sampleInterval.wholeMilliseconds),
                "samples": .int(Int64(statusPage.samples)), "failures": .int(Int64(statusPage.failures)),
                "dygraphsPath": .string(statusPage.dygraphsPath),
            ]),
            "health": .object(["stuckResultsAfterMs": .int(health.stuckResultsAfter.wholeMilliseconds)]),
            "workerSettings": effectiveWorkerSettings,
        ])
        return root.jsonText(pretty: true)
    }

    /// A retry policy under the file's keys (`maxAttempts`, `initialDelayMs`, `multiplier`, `maxDelayMs`,
    /// `jitter`, `retryTimeouts`).
    static func describe(_ policy: RetryPolicy) -> JSONValue {
        .object([
            "maxAttempts": .int(Int64(policy.maxAttempts)), "initialDelayMs": .int(policy.initialDelay.wholeMilliseconds),
            "multiplier": .double(policy.multiplier), "maxDelayMs": .int(policy.maxDelay.wholeMilliseconds),
            "jitter": .double(policy.jitter), "retryTimeouts": .bool(policy.retriesTimeouts),
        ])
    }
}
