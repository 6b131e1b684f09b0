import PushWorkerKafka
import Synchronization

/// Delivered and failed counts of `produce`.
final class DeliveryCounts: Sendable {
    private let state = Mutex<(delivered: Int, failed: Int, firstError: String?)>((0, 0, nil))
    func add(_ error: KafkaError?) {
        state.withLock { state in
            if let error {
                state.failed += 1
                if state.firstError == nil { state.firstError = error.message }
            } else {
                state.delivered += 1
            }
        }
    }
    var snapshot: (Int, Int, String?) { state.withLock { ($0.delivered, $0.failed, $0.firstError) } }
}
