import PushWorkerKafka
import Synchronization

/// Collects acknowledged results for the bench.
///
/// `@unchecked Sendable`: `onComplete` is set before the service starts and only read afterwards; all
/// other state is in the `Mutex`.
final class DeliveryCollector: @unchecked Sendable {
    private struct State {
        var count = 0
        var completedAtNs: UInt64?
        var deliveries: [BenchCommand.Delivery] = []
    }
    private let state = Mutex(State())
    private let expected: Int
    private let keepValues: Bool
    var onComplete: (@Sendable () -> Void)?

    init(expected: Int, keepValues: Bool) {
        self.expected = expected
        self.keepValues = keepValues
    }

    func add(_ record: KafkaOutgoingRecord) {
        let now = BenchClock.nowNs()
        let complete = state.withLock { state -> Bool in
            state.count += 1
            if keepValues { state.deliveries.append(.init(atNs: now, value: record.value ?? [])) }
            if state.count == expected { state.completedAtNs = now }
            return state.count == expected
        }
        if complete { onComplete?() }
    }

    var count: Int { state.withLock { $0.count } }
    /// When the last expected result was acknowledged.
    var completedAtNs: UInt64? { state.withLock { $0.completedAtNs } }
    var deliveries: [BenchCommand.Delivery] { state.withLock { $0.deliveries } }
}
