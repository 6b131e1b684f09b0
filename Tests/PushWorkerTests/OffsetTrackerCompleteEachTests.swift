@testable import PushWorker
import PushWorkerKafka
import Testing

/// ``OffsetTracker/completeEach(_:)``: which outputs the exactly-once mode's transactions accept.
@Suite struct OffsetTrackerCompleteEachTests {
    let tp = TopicPartition(topic: "pushes", partition: 0)

    @Test func acceptsPendingRecordsOnceAndMovesTheWatermark() {
        let tracker = OffsetTracker()
        tracker.track([(tp, 10), (tp, 11), (tp, 12)])
        // 11 first: accepted, the watermark waits for 10; a second result for 11 is not accepted.
        let first = tracker.completeEach([(tp, 11), (tp, 11)])
        #expect(first.accepted == [true, false] && first.moved.isEmpty)
        let second = tracker.completeEach([(tp, 10), (tp, 99)])
        #expect(second.accepted == [true, false], "an offset never tracked is not accepted")
        #expect(second.moved == [TopicPartitionOffset(tp, offset: 12)])
    }

    @Test func forgottenPartitionsAcceptNothingUntilTrackedAgain() {
        let tracker = OffsetTracker()
        tracker.track([(tp, 0), (tp, 1)])
        tracker.forget([tp])
        // A late result of a rewound record: not accepted while its record is not taken again.
        #expect(tracker.completeEach([(tp, 0)]).accepted == [false])
        tracker.track([(tp, 0)])
        let again = tracker.completeEach([(tp, 0)])
        #expect(again.accepted == [true] && again.moved == [TopicPartitionOffset(tp, offset: 1)])
    }

    @Test func abandonedRecordsAreNotAcceptedAndHoldTheWatermark() {
        let tracker = OffsetTracker()
        tracker.track([(tp, 0), (tp, 1)])
        tracker.abandon([(tp, 0)])
        let result = tracker.completeEach([(tp, 0), (tp, 1)])
        #expect(result.accepted == [false, true] && result.moved.isEmpty)
    }
}
