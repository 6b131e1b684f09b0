import Foundation
import Testing
@testable import PushWorkerCore

/// What a worker sees of its job: payload access, headers and the budget.
@Suite struct JobTests {
    @Test func objectDecodesThePayload() {
        let job = makeJob(value: Payload.silent(extra: #","contentId":"article-123","count":3,"ratio":0.5,"flag":true,"none":null,"list":[1,"x"]"#))
        let object = job.object
        #expect(object["type"]?.stringValue == "content-update")
        #expect(object["aps"]?["content-available"]?.intValue == 1)
        #expect(object["contentId"] == .string("article-123"))
        #expect(object["count"] == .int(3))
        #expect(object["ratio"] == .double(0.5))
        #expect(object["flag"] == .bool(true))
        #expect(object["none"] == .null)
        #expect(object["list"] == .array([.int(1), .string("x")]))
        #expect(object["count"]?.doubleValue == 3)
    }

    /// Copies of a job share its decoded object; a copy whose value is changed decodes its own value (it
    /// was given the original's cached object before the job kept its values in a shared box).
    @Test func aCopyWithAnotherValueDecodesItsOwnValue() {
        let job = makeJob(value: Payload.silent(extra: #","contentId":"first""#))
        #expect(job.object["contentId"] == .string("first"))
        let copy = job
        #expect(copy.object["contentId"] == .string("first"))
        var changed = job
        changed.value = Payload.silent(extra: #","contentId":"second""#)
        #expect(changed.object["contentId"] == .string("second"))
        #expect(job.object["contentId"] == .string("first"))
        var renamed = job
        renamed.messageId = "other"
        #expect(renamed.messageId == "other" && job.messageId != "other")
        #expect(renamed.object["contentId"] == .string("first"))
    }

    /// A job made without a message id (no `apns-id`) reads the default one of its source,
    /// `<topic>-<partition>-<offset>`, made on each read rather than kept; changing the source later keeps
    /// the id it had, and a set id wins.
    @Test func aJobWithoutAMessageIdReadsItsSourcesDefaultOne() {
        let source = RecordSource(topic: "pushes", partition: 3, offset: 42)
        var job = Job(messageId: nil, type: "content-update", value: Payload.silent(), key: nil, headers: [],
                      source: source, traceparentHeader: nil, attempt: 1, notStartedAt: .now, placeholderMs: 0)
        #expect(job.messageId == "pushes-3-42")
        let copy = job
        job.source = RecordSource(topic: "other", partition: 0, offset: 1)
        #expect(job.messageId == "pushes-3-42")
        #expect(job.source.topic == "other")
        #expect(copy.messageId == "pushes-3-42")
        job.messageId = "set"
        #expect(job.messageId == "set" && copy.messageId == "pushes-3-42")
    }

    @Test func decodeIntoAType() throws {
        struct Content: Decodable { var contentId: String }
        let job = makeJob(value: Payload.silent(extra: #","contentId":"article-9""#))
        #expect(try job.decode(Content.self).contentId == "article-9")
        #expect(throws: DecodingError.self) { try makeJob().decode(Content.self) }
    }

    @Test func headerLookup() {
        let job = Job(messageId: "m", type: nil, value: Payload.silent(),
                      headers: [("apns-priority", Array("10".utf8)), ("empty", nil), ("apns-priority", Array("5".utf8)), ("bad", [0xFF])],
                      source: source(0))
        #expect(job.header("apns-priority") == "10")
        #expect(job.header("empty") == nil)
        #expect(job.header("bad") == nil)
        #expect(job.header("missing") == nil)
    }

    @Test func remainingFollowsTheDeadline() {
        var job = makeJob(deadline: .now.advanced(by: .seconds(5)))
        #expect(job.remaining > .seconds(4) && job.remaining <= .seconds(5))
        job.start(budget: .milliseconds(500), at: .now)
        #expect(job.remaining > .milliseconds(300) && job.remaining <= .milliseconds(500))
        #expect(abs(job.deadlineMs - (WallClock.nowMs() + 500)) <= 100)
        job.start(budget: .milliseconds(100), at: .now.advanced(by: .seconds(-1)))
        #expect(job.remaining == .zero)
    }
}
