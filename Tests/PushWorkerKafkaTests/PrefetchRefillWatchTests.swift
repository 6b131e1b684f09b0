@testable import PushWorkerKafka
import Testing

/// When `PrefetchRefill` sends its wake-up: the queue lengths it sees, in the orders the consumer's thread
/// and the refill thread can produce them (pure logic; `PrefetchRefillTests` runs it on the embedded cluster).
struct PrefetchRefillWatchTests {
    /// A stop point of 40 000 records, looked at every 64 records taken.
    private func look(_ watch: inout PrefetchRefill.Watch, _ length: Int) -> Bool {
        watch.look(length: length, stopPoint: 40_000, margin: 64)
    }

    @Test func aConsumerThatKeepsUpSendsNothing() {
        var watch = PrefetchRefill.Watch()
        for length in [0, 500, 12_000, 39_000, 200, 0] { #expect(!look(&watch, length)) }
        #expect(watch.phase == .roomy)
    }

    @Test func aQueueThatReachedTheStopPointAndFellBelowItSendsOneRequest() {
        var watch = PrefetchRefill.Watch()
        #expect(!look(&watch, 39_950), "within one interval of the stop point: fetching may have stopped")
        #expect(watch.phase == .full)
        #expect(!look(&watch, 39_940))
        #expect(look(&watch, 39_900), "below it: the request")
        #expect(!look(&watch, 39_800), "one request at a time")
        watch.requestEnded()
        #expect(watch.phase == .roomy)
        #expect(!look(&watch, 30_000), "fetching goes on: nothing more to send")
    }

    /// The case behind the pauses seen in the benchmark with `queued.min.messages` 40 000: the request's
    /// wake-up fetched records that filled the queue to its stop point again, and the consumer took them
    /// below it before the request's answer came back. Fetching has stopped again, so the next look below
    /// the stop point sends a second request. (When the answer set the phase to roomy, nothing was sent and
    /// librdkafka 2.0.2 fetched again only after its broker thread's idle wait, up to a second.)
    @Test func aQueueThatFilledAgainWhileTheRequestWasOnItsWaySendsTheNextOne() {
        var watch = PrefetchRefill.Watch()
        _ = look(&watch, 39_990)
        #expect(look(&watch, 39_870))
        #expect(!look(&watch, 41_200), "the wake-up's fetch arrived: the queue is past the stop point again")
        #expect(!look(&watch, 39_700), "taken below it while the request is still on its way")
        watch.requestEnded()
        #expect(watch.phase == .full)
        #expect(look(&watch, 39_600), "the next request")
    }

    @Test func theConsumerFindingTheQueueEmptyAfterTheAnswerCountsAsALookBelow() {
        var watch = PrefetchRefill.Watch()
        _ = look(&watch, 40_000)
        #expect(look(&watch, 39_000))
        _ = look(&watch, 40_100)
        watch.requestEnded()
        #expect(look(&watch, 0))
    }
}
