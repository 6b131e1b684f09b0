import Foundation
import Synchronization
@testable import PushWorkerCore

// Shared helpers for the PushWorkerCore tests.

/// A value guarded by a mutex, shareable between tasks and threads.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R {
        mutex.withLock { value in body(&value) }
    }

    var value: Value { withLock { $0 } }
}

/// Collects the results a dispatcher reports through `onResult`.
final class ResultCollector: Sendable {
    private let results = Locked<[ResultRecord]>([])
    private let inputs = Locked<[InputRecord]>([])

    var all: [ResultRecord] { results.value }
    /// The input records the results answer, in the same order as ``all``.
    var allInputs: [InputRecord] { inputs.value }
    var count: Int { results.withLock { $0.count } }

    var onResult: @Sendable (ResultRecord, InputRecord) -> Void {
        { [results, inputs] record, input in
            // One lock order for both lists keeps them aligned.
            results.withLock { results in
                results.append(record)
                inputs.withLock { $0.append(input) }
            }
        }
    }

    /// The only result for `offset`, or nil when there are none or several.
    func result(offset: Int64) -> ResultRecord? {
        let matching = all.filter { $0.source.offset == offset }
        return matching.count == 1 ? matching[0] : nil
    }
}

/// A worker whose behaviour is a closure.
struct ClosureWorker: Worker {
    let body: @Sendable (Job) async throws -> WorkerOutcome
    init(_ body: @escaping @Sendable (Job) async throws -> WorkerOutcome) { self.body = body }
    func perform(_ job: Job) async throws -> WorkerOutcome { try await body(job) }
}

/// Polls `condition` until it holds or `timeout` passes; returns its last value.
func eventually(timeout: Duration = .seconds(3), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Waits for `dispatcher.waitUntilIdle()` up to `timeout`; false if it did not return in time (the wait is
/// left behind rather than hanging the test). 30 s by default: in a full `swift test` of .ci/run, with the
/// fault-ledger and exactly-once suites' services running beside it on a 2-core machine, the cooperative
/// pool that runs the jobs was seen busy for over 10 s (JobDispatcherTests' jobs of 200 ms not yet started).
func idle(_ dispatcher: JobDispatcher, within timeout: Duration = .seconds(30)) async -> Bool {
    let done = Locked<Bool>(false)
    Task {
        await dispatcher.waitUntilIdle()
        done.withLock { $0 = true }
    }
    return await eventually(timeout: timeout) { done.value }
}

/// Waits `duration` without reacting to cancellation and without holding a cooperative thread:
/// the wait happens in `Thread.sleep` on a thread of its own.
func nonCancellableSleep(_ duration: Duration) async {
    let seconds = milliseconds(duration) / 1000
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: seconds)
            continuation.resume()
        }
    }
}

func milliseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1000 + Double(attoseconds) / 1e15
}

/// Milliseconds elapsed since `start` on the monotonic clock.
func elapsedMs(since start: ContinuousClock.Instant) -> Double {
    milliseconds(start.duration(to: .now))
}

enum Payload {
    /// A valid background push: `{"aps":{"content-available":1},"type":...}`.
    static func silent(type: String? = "content-update", extra: String = "") -> [UInt8] {
        var text = #"{"aps":{"content-available":1}"#
        if let type { text += #","type":"\#(type)""# }
        text += extra
        text += "}"
        return Array(text.utf8)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A valid background push of exactly `size` bytes (padded with a data key).
    static func silent(ofSize size: Int, type: String = "content-update") -> [UInt8] {
        let head = #"{"aps":{"content-available":1},"type":"\#(type)","pad":""#
        let tail = #""}"#
        let padding = size - head.utf8.count - tail.utf8.count
        precondition(padding >= 0)
        return Array((head + String(repeating: "x", count: padding) + tail).utf8)
    }
}

func source(_ offset: Int64, partition: Int32 = 0, topic: String = "pushes") -> RecordSource {
    RecordSource(topic: topic, partition: partition, offset: offset)
}

func makeJob(type: String? = "content-update", value: [UInt8] = Payload.silent(), messageId: String = "msg-1",
             traceparent: String? = nil, deadline: ContinuousClock.Instant = .now.advanced(by: .seconds(30))) -> Job {
    Job(messageId: messageId, type: type, value: value, source: source(7), traceparent: traceparent, deadline: deadline)
}

/// A fresh directory under the system temporary directory; removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "pushworker-core-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes an executable `/bin/sh` script (mode 755) and returns its path.
    func script(_ name: String, _ body: String) throws -> String {
        let file = "\(path)/\(name)"
        try Data(("#!/bin/sh\n" + body + "\n").utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file)
        return file
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}


/// Runs `body` on a thread of its own (never the cooperative pool): for a test whose output callback
/// blocks an executor thread (a pool thread) until the test has done something. Done from the test's own
/// async code, that step would need a free pool thread, and two such tests at once could block both of a
/// 2-core machine's pool threads and wait for each other for ever.
func onDedicatedThread(_ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread { body() }
}

/// Waits on the calling thread (a dedicated one, see ``onDedicatedThread(_:)``) until `condition` holds,
/// up to `timeout`; returns whether it did.
func spinUntil(timeout: Duration = .seconds(20), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        usleep(1000)
    }
    return true
}
