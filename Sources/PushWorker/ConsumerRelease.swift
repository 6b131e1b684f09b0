import PushWorkerKafka
import Synchronization

/// Holds a service's Kafka consumer until ``releaseOnDedicatedThread()`` drops it on a thread of its own.
///
/// The consumer's handle is freed (`rd_kafka_destroy`, which joins librdkafka's threads and may block) when
/// the last reference to it drops. This holder keeps one reference while the pipeline runs, so that the
/// pipeline's own references drop without freeing it, and drops that last one on a dedicated thread,
/// never on the cooperative pool.
final class ConsumerRelease: Sendable {
    private let consumer = Mutex<(any AnyObject & Sendable)?>(nil)

    /// Keeps `consumer` until ``releaseOnDedicatedThread()``.
    func hold(_ consumer: any AnyObject & Sendable) {
        self.consumer.withLock { $0 = consumer }
    }

    /// Drops the consumer on a dedicated thread (freeing it there when no one else holds it) and waits.
    func releaseOnDedicatedThread() async {
        guard consumer.withLock({ $0 != nil }) else { return }
        _ = try? await DedicatedThread.run(name: "pushworker-consumer-release") { [self] in
            let last = self.consumer.withLock { consumer in
                defer { consumer = nil }
                return consumer
            }
            _ = last  // dropped here, on this thread, after the lock
        }
    }
}
