import PushWorkerCore
import PushWorkerEndpoints
import PushWorkerKafka

/// Liveness (`/healthz`) and readiness (`/readyz`) of a running service, from snapshot reads only (atomics
/// and `Mutex`-protected state): safe on the HTTP server's thread.
struct ServiceHealth: Sendable {
    /// How long one of the service's threads may go without a round before liveness fails: 30 s. The
    /// consumer thread polls with a 100 ms timeout, the producer's poll thread with 100 ms, the deadline
    /// thread wakes at least every 500 ms; only a stuck thread (a callback or completion that blocks) comes
    /// near it, while long drains (revocation, shutdown) beat on every step.
    static let stallThreshold: Duration = .seconds(30)

    let loop: ConsumerLoop
    let publisher: any OutputPublisher
    let executor: BudgetedExecutor
    let metrics: ServiceMetrics
    /// ``stallThreshold`` unless a test sets a shorter one.
    let stallThreshold: Duration
    /// How long a result may wait unacknowledged before readiness fails (``HealthConfiguration/stuckResultsAfter``).
    let stuckResultsAfter: Duration
    /// The consumer's `statistics.interval.ms`, 0 when statistics are off.
    let statisticsIntervalMs: Int
    let stopping: @Sendable () -> Bool

    /// `/healthz`: 200 `ok` when the consumer loop, the producer's poll thread and the deadline thread all
    /// made a round within the stall threshold (``stallThreshold``, 30 s); else 503 with a JSON body naming the failing checks.
    /// In the exactly-once mode `producerPoll` is also the transactions' owner thread (the staler of the two).
    func liveness() -> EndpointResponse {
        let stopping = stopping()
        let checks: [(name: String, since: Duration?)] = [
            ("consumerLoop", loop.sinceLastRound), ("producerPoll", publisher.sinceLastPoll), ("deadlineTimer", executor.sinceDeadlineTimerRound),
        ]
        var results: [(String, Bool)] = []
        var failing: [String] = []
        for (name, since) in checks {
            // No heartbeat: the thread has finished, which is expected only while stopping.
            let ok = since.map { $0 < stallThreshold } ?? stopping
            results.append((name, ok))
            if !ok {
                failing.append(since.map { "\(name): no round for \(Self.seconds($0)) s" } ?? "\(name): not running")
            }
        }
        if failing.isEmpty { return EndpointResponse(status: 200, text: "ok\n") }
        var body = "{\"live\":false,\"checks\":" + Self.json(results) + ",\"failing\":["
        body += failing.map { "\"\($0)\"" }.joined(separator: ",") + "]}\n"
        return EndpointResponse(status: 503, contentType: "application/json", body: Array(body.utf8))
    }

    /// `/readyz`: 200 when connected to a broker, in the consumer group, with at least one partition
    /// assigned, no result waiting for the broker's acknowledgement longer than ``stuckResultsAfter``, and
    /// not shutting down; else 503. The body lists each check:
    /// `{"ready":false,"checks":{"broker":true,"group":true,"assigned":false,"results":true,"serving":true}}`.
    ///
    /// `results` fails while the oldest result or dead letter not yet acknowledged was published more than
    /// ``stuckResultsAfter`` ago (a refused topic, a broker outage, a record kept because even its smallest
    /// replacement is refused); it passes again once it is acknowledged.
    ///
    /// Sources: `assigned` from the rebalance callbacks; `broker` and `group` from the consumer's latest
    /// librdkafka statistics (a broker connection `UP`; `cgrp.state` `up`), which count only while fresh
    /// (at most 3 statistics intervals + 1 s old). With statistics turned off (`statistics.interval.ms=0`),
    /// both follow `assigned` (an assignment comes through the group's coordinator).
    func readiness() -> EndpointResponse {
        let assigned = !metrics.assigned.isEmpty
        var broker = assigned
        var group = assigned
        if statisticsIntervalMs > 0 {
            if let (statistics, age) = metrics.latestStatistics(.consumer), age <= .milliseconds(3 * statisticsIntervalMs + 1000) {
                broker = statistics.brokersUp > 0
                group = statistics.consumerGroup?.state == "up"
            } else {
                broker = false
                group = false
            }
        }
        let results = publisher.oldestUnacknowledgedAge.map { $0 <= stuckResultsAfter } ?? true
        return Self.readinessResponse(broker: broker, group: group, assigned: assigned, results: results, serving: !stopping())
    }

    /// The `/readyz` response for these checks: 200 when all pass, else 503; the body as in ``readiness()``.
    /// Also served before the pipeline exists (nothing connected yet, nothing waiting, not stopping).
    static func readinessResponse(broker: Bool, group: Bool, assigned: Bool, results: Bool = true, serving: Bool) -> EndpointResponse {
        let checks = [("broker", broker), ("group", group), ("assigned", assigned), ("results", results), ("serving", serving)]
        let ready = checks.allSatisfy(\.1)
        let body = "{\"ready\":\(ready),\"checks\":\(json(checks))}\n"
        return EndpointResponse(status: ready ? 200 : 503, contentType: "application/json", body: Array(body.utf8))
    }

    private static func json(_ checks: [(String, Bool)]) -> String {
        "{" + checks.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    private static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        return "\(whole).\(attoseconds / 100_000_000_000_000_000)"
    }
}
