@testable import PushWorker
import PushWorkerKafka
import Testing

/// ``OffsetTracker/complete(_:)``: which committable offsets a batch of acknowledgements moves, over
/// several partitions and topics, in any order.
@Suite struct OffsetTrackerCompleteTests {
    let a0 = TopicPartition(topic: "pushes", partition: 0)
    let a1 = TopicPartition(topic: "pushes", partition: 1)
    let b0 = TopicPartition(topic: "push-retries", partition: 0)

    @Test func eachMovedPartitionOnceWithItsLastWatermark() {
        let tracker = OffsetTracker()
        tracker.track([(a0, 0), (a0, 1), (a0, 2), (a1, 5), (a1, 6), (b0, 0), (b0, 1)])
        // a0 moves twice in the batch (to 1, then 3): reported once, at 3; a1 waits for 5; b0 (same
        // partition number as a0, another topic) moves to 1.
        let moved = tracker.complete([(a0, 0), (a1, 6), (b0, 0), (a0, 2), (a0, 1)])
        #expect(moved == [TopicPartitionOffset(a0, offset: 3), TopicPartitionOffset(b0, offset: 1)])
        #expect(tracker.complete([(a1, 5), (b0, 1)]) == [TopicPartitionOffset(a1, offset: 7), TopicPartitionOffset(b0, offset: 2)])
        #expect(tracker.outstanding == 0)
    }

    @Test func untrackedAndRepeatedAcknowledgementsMoveNothing() {
        let tracker = OffsetTracker()
        tracker.track([(a0, 10), (a0, 11)])
        let other = TopicPartition(topic: "unknown", partition: 0)
        #expect(tracker.complete([(other, 10), (a0, 11), (a0, 11), (a0, 99)]).isEmpty)
        #expect(tracker.complete([(other, 1), (a0, 10)]) == [TopicPartitionOffset(a0, offset: 12)])
        // A forgotten partition is not tracked any more.
        tracker.track([(a1, 0)])
        tracker.forget([a1])
        #expect(tracker.complete([(a1, 0)]).isEmpty)
    }

    @Test func manyRecordsInOneBatchCompactTheQueue() {
        let tracker = OffsetTracker()
        tracker.track((0..<10_000).map { (a0, Int64($0)) } + (0..<10_000).map { (a1, Int64($0)) })
        // All but the last of a0 (the queue compacts past 4096 done records), and a1 backwards.
        let first = tracker.complete((0..<9_999).map { (a0, Int64($0)) } + (0..<10_000).reversed().map { (a1, Int64($0)) })
        #expect(first == [TopicPartitionOffset(a0, offset: 9_999), TopicPartitionOffset(a1, offset: 10_000)])
        #expect(tracker.outstanding == 1)
        #expect(tracker.complete([(a0, 9_999)]) == [TopicPartitionOffset(a0, offset: 10_000)])
    }
}
