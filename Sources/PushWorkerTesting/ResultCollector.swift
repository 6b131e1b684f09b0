import PushWorkerKafka
import Synchronization

/// The results a ``PushWorkerTestHarness``'s service delivered (what its `onResult` receives), parsed, in
/// delivery order; shared by the harness and the service's callback.
final class ResultCollector: Sendable {
    private let results = Mutex<[ReceivedResult]>([])

    func add(_ record: KafkaOutgoingRecord) {
        let result = ReceivedResult(record: record)
        results.withLock { $0.append(result) }
    }

    var count: Int { results.withLock { $0.count } }
    func reset() { results.withLock { $0.removeAll() } }
    var all: [ReceivedResult] { results.withLock { $0 } }
}
