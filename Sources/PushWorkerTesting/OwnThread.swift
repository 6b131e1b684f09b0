import Foundation

/// Runs CPU-bound test work (a model check, a differential loop over thousands of inputs) on a thread of
/// its own, and returns what it returns once it is done.
///
/// Swift's cooperative pool has one thread per core: two on the CI machine. A test that computes for
/// seconds on it keeps every other test's continuations waiting, and tests that wait on a timer or on a
/// service run past their bounds. That was the "start-up stall" of the parallel test run: the model checks
/// started first and held both threads for about 10 s (seen in stack samples of the test process). On a
/// thread of its own the work still takes its share of the cores, and the pool stays free.
///
/// ```swift
/// @Test func modelCheck() async {
///     let failures = await onOwnThread { Self.check(seeds: 0..<2500) }
///     #expect(failures.isEmpty)
/// }
/// ```
public func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { (continuation: CheckedContinuation<Result, Never>) in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
