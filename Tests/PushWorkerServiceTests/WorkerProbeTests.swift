import PushWorkerCore
import PushWorkerTesting
import Testing

/// The testing kit's direct call: a worker, a hand-built job, a short budget.
@Suite(.timeLimit(.minutes(1)))
struct WorkerProbeTests {
    @Test func runsTheWorkerWithTheJobTheServiceWouldBuild() async {
        let report = await WorkerProbe.run(ClosureWorker { job in
            #expect(job.type == "content-update")
            #expect(job.messageId == "m-1")
            #expect(job.traceparent == "00-abc-def-01")
            return job.object["contentId"]?.stringValue == "a-1" ? .newData : .noData
        }, payload: #"{"aps":{"content-available":1},"type":"content-update","contentId":"a-1"}"#,
           headers: ["apns-id": "m-1", "traceparent": "00-abc-def-01"])
        #expect(report.outcome == .newData)
    }

    @Test func aShortBudgetTimesOut() async {
        let report = await WorkerProbe.run(NoopWorker(outcome: .newData, delay: .seconds(5)),
                                           payload: #"{"aps":{"content-available":1}}"#, budget: .milliseconds(100))
        #expect(report.outcome.reason == .timeout)
        #expect(report.timedOut)
    }
}
