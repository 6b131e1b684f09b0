import Foundation
import Testing
@testable import PushWorkerCore

/// Issue 8 through `JobDispatcher.submit`: header values are kept byte for byte (UTF-8 or not), bounded in
/// size, and a `\u0000` in the `type` routes by the whole string.
@Suite(.timeLimit(.minutes(1))) struct JobDispatcherHeaderTests {
    static let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    /// `content-update` and `ok` are registered; `seen` gets every job a worker ran.
    func dispatcher(_ collector: ResultCollector, seen: Locked<[Job]> = Locked([]), withDefault: Bool = false) -> JobDispatcher {
        // Far more than the jobs need: only a stalled machine (ThreadSanitizer, load) comes near it.
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        for type in ["content-update", "ok"] {
            registry.register(type: type, worker: ClosureWorker { job in
                seen.withLock { $0.append(job) }
                return .newData
            }, name: "closure:\(type)")
        }
        if withDefault {
            registry.setDefault(worker: ClosureWorker { job in
                seen.withLock { $0.append(job) }
                return .noData
            }, name: "fallback")
        }
        return JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
    }

    func run(_ value: [UInt8]?, headers: [(name: String, value: [UInt8]?)], seen: Locked<[Job]> = Locked([]), withDefault: Bool = false) async throws -> ResultRecord {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector, seen: seen, withDefault: withDefault)
        dispatcher.submit([InputRecord(source: source(9, partition: 1), value: value, headers: headers, receivedAtMs: WallClock.nowMs())])
        #expect(await idle(dispatcher))
        return try #require(collector.result(offset: 9))
    }

    // MARK: defect 2: a NUL never cuts a string

    @Test func aNulTypeRoutesByTheWholeString() async throws {
        let seen = Locked<[Job]>([])
        let result = try await run(Array(#"{"aps":{"content-available":1},"type":"ok\u0000evil"}"#.utf8), headers: [], seen: seen)
        #expect(result.result == .noData)
        #expect(result.reason == .noWorker)
        #expect(result.type == "ok\u{0}evil")
        #expect(String(decoding: result.jsonBytes(), as: UTF8.self).contains(#""type":"ok\u0000evil""#))
        #expect(seen.value.isEmpty, "the ok worker never runs")
    }

    @Test func aDefaultWorkerGetsTheWholeType() async throws {
        let seen = Locked<[Job]>([])
        let result = try await run(Array(#"{"aps":{"content-available":1},"type":"ok\u0000evil"}"#.utf8), headers: [], seen: seen, withDefault: true)
        #expect(result.worker == "fallback")
        #expect(seen.value.map(\.type) == ["ok\u{0}evil"])
    }

    @Test func anApnsIdWithANulIsTheWholeMessageId() async throws {
        let id: [UInt8] = Array("id".utf8) + [0] + Array("tail".utf8)
        let seen = Locked<[Job]>([])
        let result = try await run(Payload.silent(), headers: [("apns-id", id)], seen: seen)
        #expect(result.messageId == "id\u{0}tail")
        #expect(result.apnsIdHeader == id)
        #expect(seen.value.map(\.messageId) == ["id\u{0}tail"])
        #expect(String(decoding: result.jsonBytes(), as: UTF8.self).contains(#""messageId":"id\u0000tail""#))
    }

    // MARK: defect 3: headers byte for byte

    @Test func headersThatAreNotUTF8AreKeptByteForByte() async throws {
        let apnsId: [UInt8] = [0xFF, 0xFE]
        let traceparent: [UInt8] = [0xFF, 0xFE, 0xFD]
        let seen = Locked<[Job]>([])
        let result = try await run(Payload.silent(), headers: [("apns-id", apnsId), ("traceparent", traceparent)], seen: seen)
        #expect(result.result == .newData)
        #expect(result.apnsIdHeader == apnsId)
        #expect(result.traceparentHeader == traceparent)
        // The JSON messageId is the default id: the bytes are not text.
        #expect(result.messageId == "pushes-1-9")
        let job = try #require(seen.value.first)
        #expect(job.messageId == "pushes-1-9")
        #expect(job.traceparentHeader == traceparent)
        #expect(job.traceparent == nil)
        #expect(job.traceContext == nil)
    }

    @Test func rejectedRecordsKeepTheirHeadersToo() async throws {
        let result = try await run(Array("not json".utf8), headers: [("apns-id", [0xC3, 0x28]), ("traceparent", [0x80])])
        #expect(result.reason == .invalidPayload)
        #expect(result.apnsIdHeader == [0xC3, 0x28])
        #expect(result.traceparentHeader == [0x80])
    }

    @Test func anEmptyApnsIdIsCopiedEmptyAndTheMessageIdIsTheDefault() async throws {
        let result = try await run(Payload.silent(), headers: [("apns-id", [])])
        #expect(result.apnsIdHeader == [])
        #expect(result.messageId == "pushes-1-9")
    }

    @Test func theFirstHeaderCounts() async throws {
        let result = try await run(Payload.silent(), headers: [("apns-id", Array("first".utf8)), ("apns-id", Array("second".utf8))])
        #expect(result.messageId == "first")
        #expect(result.apnsIdHeader == Array("first".utf8))
    }

    @Test func aJobCarriesTheTraceContext() async throws {
        let seen = Locked<[Job]>([])
        _ = try await run(Payload.silent(), headers: [("traceparent", Array(Self.traceparent.utf8))], seen: seen)
        let job = try #require(seen.value.first)
        #expect(job.traceparent == Self.traceparent)
        let context = try #require(job.traceContext)
        #expect(context.traceId == "0af7651916cd43dd8448eb211c80319c")
        #expect(context.parentId == "b7ad6b7169203331")
        #expect(context.isSampled)
    }

    @Test func aWorkerSeesTheRecordsHeadersAndALoggerWithItsMetadata() async throws {
        struct Seen: Sendable {
            var headers: RecordHeaders
            var label: String
            var metadata: PushWorkerLogger.Metadata
        }
        let seen = Locked<[Seen]>([])
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "content-update", worker: ClosureWorker { job in
            let logger = job.logger
            seen.withLock { $0.append(Seen(headers: job.headers, label: logger.label, metadata: logger.metadata)) }
            return .newData
        }, name: "swift:content-update")
        let collector = ResultCollector()
        let dispatcher = JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
        let headers: RecordHeaders = [
            RecordHeader(name: "x-tenant", string: "t-1"), RecordHeader(name: "apns-id", string: "m-42"),
            RecordHeader(name: "x-tenant", string: "t-2"), RecordHeader(name: "x-null", value: nil),
            RecordHeader(name: "x-raw", value: [0xFF, 0x00]), RecordHeader(name: Job.attemptsHeader, string: "2"),
        ]
        dispatcher.submit([InputRecord(source: source(17, partition: 5, topic: "pushes-ctx"), value: Payload.silent(), headers: headers, receivedAtMs: WallClock.nowMs())])
        #expect(await idle(dispatcher))
        #expect(collector.result(offset: 17)?.result == .newData)
        let job = try #require(seen.value.first)
        #expect(job.headers == headers, "every header, in record order, duplicates and null values kept")
        #expect(job.headers.values(named: "x-tenant") == [Array("t-1".utf8), Array("t-2".utf8)])
        #expect(job.headers.string(named: "x-tenant") == "t-1")
        #expect(job.headers.contains("x-null") && job.headers.bytes(named: "x-null") == nil)
        #expect(job.headers.bytes(named: "x-raw") == [0xFF, 0x00] && job.headers.string(named: "x-raw") == nil)
        #expect(job.label == "pushworker.worker")
        #expect(job.metadata == [
            "messageId": "m-42", "type": "content-update", "topic": "pushes-ctx", "partition": "5", "offset": "17",
            "attempt": "3", "worker": "swift:content-update",
        ])
    }

    // MARK: header bounds

    @Test func anApnsIdAtTheBoundIsKept() async throws {
        let id = Array(repeating: UInt8(ascii: "a"), count: PushHeaders.maxApnsIdBytes)
        let result = try await run(Payload.silent(), headers: [("apns-id", id)])
        #expect(PushHeaders.maxApnsIdBytes == 256)
        #expect(result.result == .newData)
        #expect(result.apnsIdHeader == id)
        #expect(result.messageId == String(repeating: "a", count: 256))
    }

    @Test func anApnsIdOverTheBoundIsInvalidAndNotCopied() async throws {
        let seen = Locked<[Job]>([])
        let result = try await run(Payload.silent(), headers: [("apns-id", Array(repeating: UInt8(ascii: "a"), count: 257))], seen: seen)
        #expect(result.result == .failed)
        #expect(result.reason == .invalidPayload)
        let detail = try #require(result.detail)
        #expect(detail.contains("apns-id") && detail.contains("257") && detail.contains("256"), "\(detail)")
        #expect(result.apnsIdHeader == nil)
        #expect(result.messageId == "pushes-1-9")
        #expect(seen.value.isEmpty)
    }

    @Test func aTraceparentAtTheBoundIsKeptOneOverIsNot() async throws {
        #expect(PushHeaders.maxTraceparentBytes == 512)
        let atBound = Array(repeating: UInt8(ascii: "0"), count: 512)
        let kept = try await run(Payload.silent(), headers: [("traceparent", atBound)])
        #expect(kept.result == .newData)
        #expect(kept.traceparentHeader == atBound)
        let over = try await run(Payload.silent(), headers: [("traceparent", atBound + [0x30]), ("apns-id", Array("m-1".utf8))])
        #expect(over.result == .failed)
        #expect(over.reason == .invalidPayload)
        let detail = try #require(over.detail)
        #expect(detail.contains("traceparent") && detail.contains("513") && detail.contains("512"), "\(detail)")
        #expect(over.traceparentHeader == nil)
        #expect(over.apnsIdHeader == Array("m-1".utf8), "the header within its bound is still copied")
    }

    @Test func aHugeApnsIdIsNeverCopiedWhateverTheResult() async throws {
        let huge = Array(repeating: UInt8(ascii: "x"), count: 1_200_000)
        let invalid = try await run(Payload.silent(), headers: [("apns-id", huge)])
        #expect(invalid.reason == .invalidPayload)
        #expect(invalid.apnsIdHeader == nil)
        #expect(invalid.jsonBytes().count < 2000)
        // A value too large is row 1, before the header's bound; the header is not copied either.
        let tooLarge = try await run(Payload.silent(ofSize: 5000), headers: [("apns-id", huge)])
        #expect(tooLarge.reason == .payloadTooLarge)
        #expect(tooLarge.apnsIdHeader == nil)
        #expect(tooLarge.messageId == "pushes-1-9")
    }

    // MARK: apns-expiration bytes

    @Test func anApnsExpirationThatIsNotUTF8IsInvalid() async throws {
        let result = try await run(Payload.silent(), headers: [("apns-expiration", [0x31, 0xFF])])
        #expect(result.reason == .invalidPayload)
        #expect(result.detail?.contains("apns-expiration") == true)
    }

    @Test func aHugeApnsExpirationGivesASmallDetail() async throws {
        let result = try await run(Payload.silent(), headers: [("apns-expiration", Array(repeating: UInt8(ascii: "9"), count: 100_000))])
        #expect(result.reason == .invalidPayload)
        let detail = try #require(result.detail)
        #expect(detail.contains("apns-expiration") && detail.contains("100000 bytes"), "\(detail)")
        #expect(detail.utf8.count < 200)
    }
}
