import Foundation
import Testing
@testable import PushWorkerCore

/// Retries, scheduled pushes and per-key order across retries in ``JobDispatcher`` (issue 10): what the
/// dispatcher hands out (``DispatcherOutput``) for each record; the service turns it into results and
/// retry-topic records (Tests/PushWorkerTests/RetryServiceTests.swift runs them on the embedded cluster).
@Suite struct JobDispatcherRetryTests {
    static let retryTopic = "push-retries-test"

    /// Collects what a dispatcher hands out.
    final class Outputs: Sendable {
        let items = Locked<[DispatcherOutput]>([])
        var onOutput: @Sendable (DispatcherOutput) -> Void { { [items] output in items.withLock { $0.append(output) } } }
        var results: [(ResultRecord, RetryRequest?)] {
            items.value.compactMap { if case .result(let result, _, let retry) = $0 { (result, retry) } else { nil } }
        }
        var forwards: [(InputRecord, Forward)] {
            items.value.compactMap { if case .forward(let input, let forward) = $0 { (input, forward) } else { nil } }
        }
        func result(offset: Int64, topic: String? = nil) -> ResultRecord? {
            results.map(\.0).first { $0.source.offset == offset && (topic == nil || $0.source.topic == topic) }
        }
    }

    /// A flag a test sets to let gated workers return.
    final class Gate: Sendable {
        let open = Locked(false)
        func release() { open.withLock { $0 = true } }
        func wait() async { while !open.value { try? await Task.sleep(for: .milliseconds(5)) } }
    }

    static func dispatcher(
        _ outputs: Outputs, registry: WorkerRegistry, policy: RetryPolicy = RetryPolicy(initialDelay: .milliseconds(200), jitter: 0),
        retryTopic: String? = retryTopic, maxHold: Duration = .seconds(15), maxHeld: Int = 10_000
    ) -> JobDispatcher {
        JobDispatcher(registry: registry, maxInFlight: 8, executor: BudgetedExecutor(),
                      delay: DelaySettings(retryTopic: retryTopic, defaultPolicy: policy, maxHold: maxHold, maxHeld: maxHeld),
                      random: { 0.5 }, onOutput: outputs.onOutput)
    }

    static func record(_ type: String, offset: Int64, key: String? = nil, topic: String = "pushes-retry",
                       headers: [(name: String, value: [UInt8]?)] = []) -> InputRecord {
        InputRecord(source: source(offset, partition: 0, topic: topic), key: key.map { Array($0.utf8) }, value: Payload.silent(type: type),
                    headers: headers, receivedAtMs: WallClock.nowMs())
    }

    static func header(_ name: String, _ value: String) -> (name: String, value: [UInt8]?) { (name, Array(value.utf8)) }

    // MARK: - The policy

    @Test func backoffGrowsByTheMultiplierUpToTheMaximumAndJitterSpreadsIt() {
        let policy = RetryPolicy(maxAttempts: 10, initialDelay: .seconds(1), multiplier: 2, maxDelay: .seconds(10), jitter: 0.2)
        #expect(policy.delay(afterAttempt: 1, random: 0.5) == .seconds(1))
        #expect(policy.delay(afterAttempt: 2, random: 0.5) == .seconds(2))
        #expect(policy.delay(afterAttempt: 3, random: 0.5) == .seconds(4))
        #expect(policy.delay(afterAttempt: 4, random: 0.5) == .seconds(8))
        #expect(policy.delay(afterAttempt: 5, random: 0.5) == .seconds(10), "capped at maxDelay")
        #expect(policy.delay(afterAttempt: 9, random: 0.5) == .seconds(10))
        #expect(policy.delay(afterAttempt: 2, random: 0) == .milliseconds(1600), "jitter 0.2 spreads 2 s to 1.6 s …")
        #expect(policy.delay(afterAttempt: 2, random: 0.999_999) == .milliseconds(2400), "… and 2.4 s")
        #expect(policy.delay(afterAttempt: 5, random: 0.999_999) == .seconds(10), "never above maxDelay")
        #expect(RetryPolicy.standard.maxAttempts == 3)
        #expect(RetryPolicy.standard.initialDelay == .seconds(1) && RetryPolicy.standard.maxDelay == .seconds(60))
        #expect(RetryPolicy(maxAttempts: 0, multiplier: 0.5, jitter: 7).maxAttempts == 1, "clamped")
        #expect(RetryPolicy(multiplier: .nan, jitter: -1).multiplier == 1)
        #expect(policy.longestRemainingWait(afterAttempt: 9) == .milliseconds(10_000), "one wait left, at its most")
        #expect(policy.longestRemainingWait(afterAttempt: 10) == .zero)
    }

    @Test func onlyRetryableFailuresAndConfiguredTimeoutsWithAttemptsLeftRunAgain() {
        let policy = RetryPolicy(maxAttempts: 3)
        #expect(policy.retries(.failed(.workerError, retryable: true), timedOut: false, attempt: 1))
        #expect(policy.retries(.failed(.workerError, retryable: true), timedOut: false, attempt: 2))
        #expect(!policy.retries(.failed(.workerError, retryable: true), timedOut: false, attempt: 3), "attempts used up")
        #expect(!policy.retries(.failed(.workerError), timedOut: false, attempt: 1), "not marked retryable")
        #expect(!policy.retries(WorkerOutcome(.noData, retryable: true), timedOut: false, attempt: 1), "only failed")
        #expect(WorkerOutcome(.newData, retryable: true).retryable == false)
        #expect(!policy.retries(.failed(.timeout), timedOut: true, attempt: 1), "timeouts only when asked")
        #expect(RetryPolicy(retriesTimeouts: true).retries(.failed(.timeout), timedOut: true, attempt: 1))
    }

    // MARK: - Retries

    @Test(.timeLimit(.minutes(1))) func aRetryableFailureIsReportedWithWillRetryAndItsNextAttempt() async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in .failed("backendDown", retryable: true) }, name: "flaky")
        registry.register(type: "broken", worker: ClosureWorker { _ in .failed(.workerError, detail: "final") }, name: "broken")
        registry.register(type: "throws", worker: ClosureWorker { _ in throw Unavailable() }, name: "throws")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        let before = WallClock.nowMs()
        dispatcher.submit([
            Self.record("flaky", offset: 1), Self.record("broken", offset: 2), Self.record("throws", offset: 3),
            // The last attempt its policy allows (3): final.
            Self.record("flaky", offset: 4, headers: [Self.header(Job.attemptsHeader, "2")]),
        ])
        #expect(await idle(dispatcher))
        let flaky = try #require(outputs.results.first { $0.0.source.offset == 1 })
        #expect(flaky.0.willRetry && flaky.0.result == .failed && flaky.0.reason == "backendDown" && flaky.0.attempt == 1)
        let retry = try #require(flaky.1)
        #expect(retry.runs == 1 && retry.messageId == "pushes-retry-0-1" && retry.origin == source(1, topic: "pushes-retry"))
        #expect(retry.notBeforeMs >= before + 200 && retry.notBeforeMs <= WallClock.nowMs() + 200, "initial delay 200 ms, no jitter")
        let broken = try #require(outputs.results.first { $0.0.source.offset == 2 })
        #expect(!broken.0.willRetry && broken.1 == nil)
        let thrown = try #require(outputs.results.first { $0.0.source.offset == 3 })
        #expect(thrown.0.willRetry && thrown.0.reason == .workerError, "a RetryableError is retried")
        let last = try #require(outputs.results.first { $0.0.source.offset == 4 })
        #expect(last.0.attempt == 3 && !last.0.willRetry && last.1 == nil)
        #expect(outputs.forwards.isEmpty)
    }

    struct Unavailable: RetryableError {}

    @Test(.timeLimit(.minutes(1))) func anImmediateWorkersRetryableFailureIsRetriedToo() async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "n", worker: NoopWorker(outcome: .failed("down", retryable: true)), name: "n")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        dispatcher.submit([Self.record("n", offset: 1, key: "k"), Self.record("n", offset: 2, key: "k")])
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 1)?.willRetry == true)
        #expect(outputs.forwards.map { "\($0.1.kind.rawValue) \($0.0.source.offset)" } == ["follower 2"], "the key's next record follows the retry")
    }

    @Test(.timeLimit(.minutes(1))) func withoutARetryTopicNothingIsRetried() async {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in .failed("backendDown", retryable: true) }, name: "flaky")
        let dispatcher = Self.dispatcher(outputs, registry: registry, retryTopic: nil)
        dispatcher.submit([Self.record("flaky", offset: 1)])
        #expect(await idle(dispatcher))
        #expect(outputs.results.count == 1 && outputs.results[0].0.willRetry == false && outputs.results[0].1 == nil)
    }

    @Test(.timeLimit(.minutes(1))) func aWorkersOwnPolicyWinsAndTimeoutsRetryOnlyWhenItSaysSo() async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "once", worker: ClosureWorker { _ in .failed(retryable: true) }, name: "once", retry: .noRetries)
        registry.register(type: "slow", worker: ClosureWorker { _ in try await Task.sleep(for: .seconds(5)); return .newData },
                          name: "slow", budget: .milliseconds(50), retry: RetryPolicy(retriesTimeouts: true))
        registry.register(type: "slowFinal", worker: ClosureWorker { _ in try await Task.sleep(for: .seconds(5)); return .newData },
                          name: "slowFinal", budget: .milliseconds(50))
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        dispatcher.submit([Self.record("once", offset: 1), Self.record("slow", offset: 2), Self.record("slowFinal", offset: 3)])
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 1)?.willRetry == false)
        #expect(outputs.result(offset: 2)?.reason == .timeout && outputs.result(offset: 2)?.willRetry == true)
        #expect(outputs.result(offset: 3)?.reason == .timeout && outputs.result(offset: 3)?.willRetry == false)
    }

    @Test(.timeLimit(.minutes(1))) func noRetryIsMadeThatWouldRunAfterTheExpiration() async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in .failed(retryable: true) }, name: "flaky")
        // Expires in 2 s; the next attempt would wait 10 s.
        let dispatcher = Self.dispatcher(outputs, registry: registry, policy: RetryPolicy(initialDelay: .seconds(10), jitter: 0))
        let expiration = String(WallClock.nowMs() / 1000 + 2)
        dispatcher.submit([Self.record("flaky", offset: 1, headers: [Self.header("apns-expiration", expiration)])])
        #expect(await idle(dispatcher))
        let result = try #require(outputs.result(offset: 1))
        #expect(!result.willRetry)
        #expect(result.detail?.contains("not retried: apns-expiration \(expiration) passes before the next attempt") == true, "\(result.detail ?? "-")")
    }

    // MARK: - Order per key across retries

    @Test(.timeLimit(.minutes(1))) func theKeysLaterRecordsFollowItsRetryThroughTheRetryTopicInOrder() async throws {
        let outputs = Outputs()
        let gate = Gate()
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in await gate.wait(); return .failed(retryable: true) }, name: "flaky")
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        // Offset 1 fails retryably; 2 and 3 (same key) wait behind it; 4 has another key.
        dispatcher.submit([
            Self.record("flaky", offset: 1, key: "device-a"), Self.record("ok", offset: 2, key: "device-a"),
            Self.record("ok", offset: 3, key: "device-a"), Self.record("ok", offset: 4, key: "device-b"),
        ])
        #expect(await eventually { outputs.result(offset: 4) != nil }, "another key is not held back")
        #expect(outputs.results.count == 1)
        gate.release()
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 1)?.willRetry == true)
        // The retry's result comes first, then its followers, in order, and no result for them yet.
        let order = outputs.items.value.map { output -> String in
            switch output {
            case .result(let result, _, let retry): "result \(result.source.offset)\(retry == nil ? "" : " retry")"
            case .forward(let input, let forward): "\(forward.kind.rawValue) \(input.source.offset)"
            }
        }
        #expect(order == ["result 4", "result 1 retry", "follower 2", "follower 3"])
        #expect(outputs.forwards.allSatisfy { $0.1.runs == 0 && $0.1.notBeforeMs == nil })
        #expect(dispatcher.parkedKeyCount == 1)
        // A later record of the key follows too, while the key is parked; another key's does not.
        dispatcher.submit([Self.record("ok", offset: 5, key: "device-a"), Self.record("ok", offset: 6, key: "device-c")])
        #expect(await idle(dispatcher))
        #expect(outputs.forwards.map(\.0.source.offset) == [2, 3, 5])
        #expect(outputs.result(offset: 6)?.result == .newData)
        // The retry and its three followers come back from the retry topic: the key is free again here.
        let retryRecord = InputRecord(source: source(10, topic: Self.retryTopic), key: Array("device-a".utf8), value: Payload.silent(type: "ok"),
                                      headers: [Self.header(Job.attemptsHeader, "1")], receivedAtMs: WallClock.nowMs())
        dispatcher.submit([retryRecord] + (11...13).map { Self.record("ok", offset: Int64($0), key: "device-a", topic: Self.retryTopic) })
        #expect(await idle(dispatcher))
        #expect(dispatcher.parkedKeyCount == 0)
        #expect((10...13).allSatisfy { outputs.result(offset: Int64($0), topic: Self.retryTopic)?.result == .newData })
        dispatcher.submit([Self.record("ok", offset: 7, key: "device-a")])
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 7)?.result == .newData, "runs here again, no longer forwarded")
    }

    /// A later record of the key arrives while the thread that parked the key has not yet handed the retry
    /// over (it was preempted between the two): the record is forwarded behind the retry, never ahead of it.
    /// Ahead of it, it would be read back from the retry topic first and run before the retry (the embedded
    /// cluster's RetryServiceTests saw a key's steps run 1, 0, 2, 3 on a loaded machine).
    @Test(.timeLimit(.minutes(1))) func aRecordForwardedWhileItsKeysRetryIsBeingHandedOverFollowsIt() async throws {
        let order = Locked<[String]>([])
        let handingOver = Locked(false)
        let release = DispatchSemaphore(value: 0)
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in .failed(retryable: true) }, name: "flaky")
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData }, name: "ok")
        let dispatcher = JobDispatcher(
            registry: registry, maxInFlight: 8, executor: BudgetedExecutor(),
            delay: DelaySettings(retryTopic: Self.retryTopic, defaultPolicy: RetryPolicy(initialDelay: .milliseconds(200), jitter: 0)),
            random: { 0.5 }
        ) { outputs in
            let names = outputs.map { output -> String in
                switch output {
                case .result(let result, _, let retry): "result \(result.source.offset)\(retry == nil ? "" : " retry")"
                case .forward(let input, let forward): "\(forward.kind.rawValue) \(input.source.offset)"
                }
            }
            if names.contains("result 1 retry") {
                // The finishing thread stops here, the key parked and the retry not yet handed over, until
                // the test has submitted the key's next record (microseconds: a thread of the executor).
                handingOver.withLock { $0 = true }
                release.wait()
            }
            order.withLock { $0 += names }
        }
        // The step that lets the finishing thread go on runs on a thread of its own, not the pool.
        let submittedMeanwhile = Locked<Bool?>(nil)
        onDedicatedThread {
            let stopped = spinUntil { handingOver.value }
            if stopped {
                dispatcher.submit([Self.record("ok", offset: 2, key: "device-a"), Self.record("ok", offset: 3, key: "device-b")])
            }
            submittedMeanwhile.withLock { $0 = stopped }
            release.signal()
        }
        dispatcher.submit([Self.record("flaky", offset: 1, key: "device-a")])
        #expect(await eventually(timeout: .seconds(30)) { submittedMeanwhile.value != nil })
        try #require(submittedMeanwhile.value == true, "the finishing thread reached the callback")
        #expect(await idle(dispatcher))
        // Another key's record runs as before (its result comes whenever its worker returns).
        #expect(order.value.filter { $0 != "result 3" } == ["result 1 retry", "follower 2"], "\(order.value)")
        #expect(order.value.contains("result 3"))
        #expect(dispatcher.parkedKeyCount == 1)
        // Once the retry is out, the key's records are forwarded at once again.
        dispatcher.submit([Self.record("ok", offset: 4, key: "device-a")])
        #expect(order.value.last == "follower 4")
    }

    /// The retry's copy is read back from the retry topic while the thread that parked the key is still
    /// handing the retry over (here: from within that hand-over): nothing of the key is in transit any more,
    /// so once the hand-over ends the key is free here, and its next record runs instead of taking the
    /// retry topic's detour. Before the fix the park stayed until it expired (minutes).
    @Test(.timeLimit(.minutes(1))) func aRetryReadBackWhileItIsHandedOverLeavesTheKeyUnparked() async throws {
        let outputs = Outputs()
        let box = Locked<JobDispatcher?>(nil)
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { _ in .failed(retryable: true) }, name: "flaky")
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData }, name: "ok")
        let readBack = InputRecord(source: source(10, topic: Self.retryTopic), key: Array("device-a".utf8), value: Payload.silent(type: "ok"),
                                   headers: [Self.header(Job.attemptsHeader, "1")], receivedAtMs: WallClock.nowMs())
        let dispatcher = JobDispatcher(
            registry: registry, maxInFlight: 8, executor: BudgetedExecutor(),
            delay: DelaySettings(retryTopic: Self.retryTopic, defaultPolicy: RetryPolicy(initialDelay: .milliseconds(200), jitter: 0)),
            random: { 0.5 }
        ) { batch in
            for output in batch { outputs.onOutput(output) }
            // The retry handed over: its copy comes straight back, before the hand-over has ended.
            if batch.contains(where: { if case .result(_, _, let retry) = $0 { retry != nil } else { false } }) {
                box.value?.submit([readBack])
            }
        }
        box.withLock { $0 = dispatcher }
        dispatcher.submit([Self.record("flaky", offset: 1, key: "device-a")])
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 1)?.willRetry == true)
        #expect(outputs.result(offset: 10, topic: Self.retryTopic)?.result == .newData)
        #expect(dispatcher.parkedKeyCount == 0)
        dispatcher.submit([Self.record("ok", offset: 2, key: "device-a")])
        #expect(await idle(dispatcher))
        #expect(outputs.result(offset: 2)?.result == .newData, "runs here, not forwarded")
        #expect(outputs.forwards.isEmpty)
        box.withLock { $0 = nil }
    }

    /// The retry runs (and fails) again before its followers are read back from the retry topic: they come
    /// back ahead of the new retry there, so they are forwarded behind it again instead of running first.
    @Test(.timeLimit(.minutes(1))) func followersReadBackAfterTheirRetryFailedAgainFollowTheNewRetry() async throws {
        let outputs = Outputs()
        let runs = Locked<[Int64]>([])
        var registry = WorkerRegistry()
        registry.register(type: "flaky", worker: ClosureWorker { job in
            runs.withLock { $0.append(job.source.offset) }
            return job.attempt < 3 ? .failed(retryable: true) : .newData
        }, name: "flaky")
        registry.register(type: "ok", worker: ClosureWorker { job in runs.withLock { $0.append(job.source.offset) }; return .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        func retry(_ offset: Int64, attempts: Int) -> InputRecord {
            InputRecord(source: source(offset, topic: Self.retryTopic), key: Array("device-a".utf8), value: Payload.silent(type: "flaky"),
                        headers: [Self.header(Job.attemptsHeader, String(attempts))], receivedAtMs: WallClock.nowMs())
        }
        func follower(_ offset: Int64) -> InputRecord { Self.record("ok", offset: offset, key: "device-a", topic: Self.retryTopic) }
        // Offset 1 fails, and 2 and 3 of its key follow it into the retry topic (offsets 10, 11, 12 there).
        dispatcher.submit([Self.record("flaky", offset: 1, key: "device-a"), Self.record("ok", offset: 2, key: "device-a"),
                           Self.record("ok", offset: 3, key: "device-a")])
        #expect(await idle(dispatcher))
        #expect(outputs.forwards.map(\.0.source.offset) == [2, 3])
        // The retry is read back alone (its followers lag behind in the fetch) and fails again: retry topic
        // offset 13 is its next attempt, written after the followers at 11 and 12.
        dispatcher.submit([retry(10, attempts: 1)])
        #expect(await idle(dispatcher))
        #expect(outputs.results.filter { $0.1 != nil }.count == 2, "the second attempt failed retryably too")
        // The followers come back now, ahead of the new retry: they follow it again and do not run.
        dispatcher.submit([follower(11), follower(12)])
        #expect(await idle(dispatcher))
        #expect(runs.value == [1, 10], "\(runs.value)")
        #expect(outputs.forwards.map(\.0.source.offset) == [2, 3, 11, 12])
        #expect(dispatcher.parkedKeyCount == 1)
        // The third attempt, then the followers once more: now they run, after it, in order.
        dispatcher.submit([retry(13, attempts: 2), follower(14), follower(15)])
        #expect(await idle(dispatcher))
        #expect(runs.value == [1, 10, 13, 14, 15], "\(runs.value)")
        #expect(dispatcher.parkedKeyCount == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aRetryWaitingForItsTimeHoldsItsKeyButNotOthers() async throws {
        let outputs = Outputs()
        let ran = Locked<[String]>([])
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { job in ran.withLock { $0.append(job.messageId) }; return .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        let due = WallClock.nowMs() + 1500
        let retry = InputRecord(
            source: source(1, topic: Self.retryTopic), key: Array("device-a".utf8), value: Payload.silent(type: "ok"),
            headers: [Self.header(Job.attemptsHeader, "1"), Self.header(NotBefore.header, String(due)), Self.header(PushHeaders.messageIdHeader, "first-id"),
                      Self.header(PushHeaders.sourceTopicHeader, "pushes-retry"), Self.header(PushHeaders.sourcePartitionHeader, "0"),
                      Self.header(PushHeaders.sourceOffsetHeader, "77")],
            receivedAtMs: WallClock.nowMs())
        dispatcher.submit([retry, Self.record("ok", offset: 2, key: "device-a"), Self.record("ok", offset: 3, key: "device-b")])
        #expect(dispatcher.heldCount == 1)
        #expect(await eventually { ran.value.contains("pushes-retry-0-3") })
        #expect(WallClock.nowMs() >= due || !ran.value.contains("first-id") && !ran.value.contains("pushes-retry-0-2"), "the key waits behind its retry")
        #expect(await idle(dispatcher))
        #expect(WallClock.nowMs() >= due)
        #expect(ran.value == ["pushes-retry-0-3", "first-id", "pushes-retry-0-2"])
        let result = try #require(outputs.result(offset: 1, topic: Self.retryTopic))
        #expect(result.messageId == "first-id", "every attempt reports the first one's message id")
        #expect(result.attempt == 2)
        #expect(result.origin == source(77, topic: "pushes-retry"))
        #expect((result.startedAtMs ?? 0) >= due)
    }

    @Test(.timeLimit(.minutes(1))) func anExpirationThatPassesWhileARetryWaitsIsCheckedBeforeItRuns() async throws {
        let outputs = Outputs()
        let ran = Locked(0)
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { _ in ran.withLock { $0 += 1 }; return .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        let nowMs = WallClock.nowMs()
        // Expires at the next whole second; due 1.2 s from now: past the expiration.
        let expiration = nowMs / 1000 + 1
        let retry = InputRecord(
            source: source(1, topic: Self.retryTopic), key: Array("k".utf8), value: Payload.silent(type: "ok"),
            headers: [Self.header(Job.attemptsHeader, "1"), Self.header(NotBefore.header, String(nowMs + 1200)),
                      Self.header("apns-expiration", String(expiration))],
            receivedAtMs: nowMs)
        dispatcher.submit([retry])
        #expect(await idle(dispatcher))
        let result = try #require(outputs.result(offset: 1, topic: Self.retryTopic))
        #expect(result.result == .noData && result.reason == .expired, "\(result.detail ?? "-")")
        #expect(ran.value == 0)
    }

    // MARK: - Scheduled pushes

    @Test(.timeLimit(.minutes(1))) func aScheduledPushWaitsInMemoryWhenDueSoonAndGoesToTheRetryTopicWhenDueLater() async throws {
        let outputs = Outputs()
        let started = Locked<[Int64: Int64]>([:])
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { job in started.withLock { $0[job.source.offset] = WallClock.nowMs() }; return .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry, maxHold: .seconds(5))
        let nowMs = WallClock.nowMs()
        let soon = nowMs + 300
        let rfc3339 = WallClock.rfc3339(ms: nowMs + 3_600_000)
        dispatcher.submit([
            Self.record("ok", offset: 1, key: "device-a", headers: [Self.header(NotBefore.header, String(soon))]),
            // The same key: a scheduled push does not hold its key back.
            Self.record("ok", offset: 2, key: "device-a"),
            Self.record("ok", offset: 3, headers: [Self.header(NotBefore.header, rfc3339)]),
            Self.record("ok", offset: 4, headers: [Self.header(NotBefore.header, String(nowMs - 60_000))]),  // past: runs now
            Self.record("ok", offset: 5, headers: [Self.header(NotBefore.header, String(nowMs + 3_600_000))], ),
        ])
        #expect(await idle(dispatcher))
        #expect(started.value[2] != nil && started.value[4] != nil)
        #expect((started.value[1] ?? 0) >= soon, "held until its time")
        #expect(started.value[3] == nil && started.value[5] == nil)
        #expect(outputs.forwards.map { "\($0.1.kind.rawValue) \($0.0.source.offset)" } == ["scheduled 3", "scheduled 5"])
        #expect(outputs.forwards.allSatisfy { $0.1.notBeforeMs == nowMs + 3_600_000 && $0.1.runs == 0 })
    }

    /// A scheduled push read back from the retry topic while still not due within `maxHold` is held here
    /// for `maxHold` before it is written back (`requeued`): one produce and one consume per `maxHold`, as
    /// docs/guarantees.md promises, not as fast as the retry topic carries it (before: written back at
    /// once, 181–187 copies in 2 s of one push due in 4 s with `maxHold` 2 s).
    @Test(.timeLimit(.minutes(1))) func aPushReadBackStillNotDueIsHeldForMaxHoldBeforeItIsWrittenBack() async throws {
        let outputs = Outputs()
        let started = Locked<[Int64]>([])
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { job in started.withLock { $0.append(job.source.offset) }; return .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry, maxHold: .milliseconds(300))
        let submittedAt = ContinuousClock.now
        let nowMs = WallClock.nowMs()
        dispatcher.submit([
            // Due in an hour: held 300 ms, then written back once.
            Self.record("ok", offset: 9, topic: Self.retryTopic, headers: [Self.header(NotBefore.header, String(nowMs + 3_600_000))]),
            // Due in 500 ms: held 300 ms, then (due within maxHold by then) held until due and run.
            Self.record("ok", offset: 10, topic: Self.retryTopic, headers: [Self.header(NotBefore.header, String(nowMs + 500))]),
        ])
        #expect(outputs.forwards.isEmpty, "not written back at once")
        #expect(dispatcher.heldCount == 2)
        #expect(await eventually(timeout: .seconds(10)) { !outputs.forwards.isEmpty && started.value == [10] })
        #expect(submittedAt.duration(to: .now) >= .milliseconds(300), "held for maxHold first")
        #expect(outputs.forwards.map { "\($0.1.kind.rawValue) \($0.0.source.offset)" } == ["requeued 9"])
        #expect(outputs.forwards.first?.1.notBeforeMs == nowMs + 3_600_000)
        #expect(await idle(dispatcher))
        #expect(outputs.forwards.count == 1, "written back once")
        #expect(outputs.result(offset: 10)?.result == .newData)
    }

    @Test(.timeLimit(.minutes(1))) func beyondMaxHeldScheduledPushesGoToTheRetryTopic() async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry, maxHeld: 2)
        let due = String(WallClock.nowMs() + 2000)
        dispatcher.submit((1...4).map { Self.record("ok", offset: Int64($0), headers: [Self.header(NotBefore.header, due)]) })
        #expect(dispatcher.heldCount == 2)
        #expect(outputs.forwards.map(\.0.source.offset) == [3, 4])
        // Taken back (a revocation): held records are returned and never run.
        let discarded = dispatcher.discardWaiting { _ in true }
        #expect(Set(discarded.map(\.offset)) == [1, 2])
        #expect(dispatcher.heldCount == 0)
        #expect(await idle(dispatcher))
        #expect(outputs.results.isEmpty)
    }

    @Test("a malformed pushworker-not-before is failed/invalidPayload naming the header", arguments: [
        "tomorrow", "2026-12-01T21:00:00", "12345678901234567", "-5", "", "2026-13-01T21:00:00Z",
    ])
    func malformedNotBefore(_ value: String) async throws {
        let outputs = Outputs()
        var registry = WorkerRegistry()
        registry.register(type: "ok", worker: ClosureWorker { _ in .newData }, name: "ok")
        let dispatcher = Self.dispatcher(outputs, registry: registry)
        dispatcher.submit([Self.record("ok", offset: 1, headers: [Self.header(NotBefore.header, value)])])
        #expect(await idle(dispatcher))
        let result = try #require(outputs.result(offset: 1))
        #expect(result.result == .failed && result.reason == .invalidPayload)
        #expect(result.detail?.contains("pushworker-not-before") == true, "\(result.detail ?? "-")")
    }

    @Test("pushworker-not-before in both forms", arguments: [
        ("1796166000000", Int64(1_796_166_000_000)),
        ("2026-12-01T21:00:00Z", 1_796_158_800_000),
        ("2026-12-01T21:00:00.250Z", 1_796_158_800_250),
        ("2026-12-01t21:00:00z", 1_796_158_800_000),
        ("2026-12-01 22:00:00+01:00", 1_796_158_800_000),
        ("2026-12-01T16:00:00-05:00", 1_796_158_800_000),
    ])
    func notBeforeForms(_ text: String, _ expected: Int64) {
        #expect(NotBefore(header: Array(text.utf8))?.unixMs == expected)
    }
}
