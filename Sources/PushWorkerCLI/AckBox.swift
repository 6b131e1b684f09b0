import Synchronization

/// The bare pipe's count of acknowledged records, shared with the producer's delivery callback.
final class AckBox: Sendable {
    let count = Atomic<Int>(0)
}
