/// An async gate that workers wait on until a test opens it: holds jobs "running" while a test looks at
/// the service (offsets not committed, backpressure, shutdown with jobs in flight).
///
/// `wait()` ignores cancellation on purpose, so a gated worker can also play one that ignores its deadline.
/// ```swift
/// let gate = Gate()
/// registry.register(type: "held", worker: ClosureWorker { _ in await gate.wait(); return .newData })
/// // … produce, inspect …
/// await gate.open()
/// ```
public actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Creates a closed gate.
    public init() {}

    /// Returns once the gate is open (at once if it already is).
    public func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Opens the gate for good: every waiter, present and future, goes on.
    public func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters.removeAll()
    }
}
