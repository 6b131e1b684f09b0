import Foundation
import Testing
@testable import PushWorkerCore

/// The `pushworker-attempts` header (a record redriven from the dead-letter topic runs as attempt N + 1)
/// and the input record `onResult` hands over with each result (the service copies it to the dead-letter
/// topic byte for byte), for records a worker ran and for records rejected before routing.
@Suite struct JobDispatcherAttemptTests {
    static let invalidJSON = Payload.bytes(#"{"aps":{"content-available":1}"#)

    /// `failing` runs on the executor (ClosureWorker), `instant` answers without suspending (NoopWorker).
    func dispatcher(_ collector: ResultCollector) -> JobDispatcher {
        var registry = WorkerRegistry(defaultBudget: .seconds(60))
        registry.register(type: "failing", worker: ClosureWorker { _ in .failed(.workerError, detail: "on purpose") }, name: "failing")
        registry.register(type: "instant", worker: NoopWorker(outcome: .noData), name: "instant")
        return JobDispatcher(registry: registry, maxInFlight: 4, executor: BudgetedExecutor(), onResult: collector.onResult)
    }

    func record(_ value: [UInt8]?, offset: Int64, key: String? = nil, headers: [(name: String, value: [UInt8]?)] = []) -> InputRecord {
        InputRecord(source: source(offset, partition: 3, topic: "pushes-attempts"), key: key.map { Array($0.utf8) }, value: value,
                    headers: headers, receivedAtMs: 1_700_000_000_000 + offset)
    }

    /// Header value (nil: no header at all) → the attempt the record runs as.
    static let attemptCases: [(String, [UInt8]?, Int)] = [
        ("absent", nil, 1),
        ("0", Array("0".utf8), 1),
        ("2", Array("2".utf8), 3),
        ("999999 (six digits)", Array("999999".utf8), 1_000_000),
        ("-1", Array("-1".utf8), 1),
        ("x", Array("x".utf8), 1),
        ("2x", Array("2x".utf8), 1),
        ("+2", Array("+2".utf8), 1),
        (" 2", Array(" 2".utf8), 1),
        ("1234567 (seven digits)", Array("1234567".utf8), 1),
        ("empty", [], 1),
    ]

    @Test("the attempts header sets the attempt of routed and rejected records", .timeLimit(.minutes(1)), arguments: attemptCases)
    func attemptFromHeader(_ name: String, _ value: [UInt8]?, _ expected: Int) async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector)
        let headers: [(name: String, value: [UInt8]?)] = value.map { [(Job.attemptsHeader, $0)] } ?? []
        dispatcher.submit([
            record(Payload.silent(type: "failing"), offset: 1, headers: headers),   // runs on the executor
            record(Payload.silent(type: "instant"), offset: 2, headers: headers),   // answered at once
            record(Self.invalidJSON, offset: 3, headers: headers),                  // rejected: invalidPayload
            record(nil, offset: 4, headers: headers),                               // rejected: null value
            record(Payload.silent(type: "nobody"), offset: 5, headers: headers),    // no worker: noData
        ])
        #expect(await idle(dispatcher))
        #expect(collector.count == 5)
        for offset: Int64 in 1...5 {
            let result = try #require(collector.result(offset: offset), "offset \(offset)")
            #expect(result.attempt == expected, "header \(name), offset \(offset): attempt \(result.attempt)")
        }
        #expect(collector.result(offset: 1)?.result == .failed)
        #expect(collector.result(offset: 3)?.reason == .invalidPayload)
        #expect(collector.result(offset: 4)?.reason == .invalidPayload)
        #expect(collector.result(offset: 5)?.reason == .noWorker)
    }

    @Test(.timeLimit(.minutes(1)))
    func aHeaderWithoutValueMeansAttemptOne() async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector)
        dispatcher.submit([
            record(Payload.silent(type: "failing"), offset: 1, headers: [(Job.attemptsHeader, nil)]),
            record(Self.invalidJSON, offset: 2, headers: [(Job.attemptsHeader, nil)]),
        ])
        #expect(await idle(dispatcher))
        #expect(collector.all.map(\.attempt) == [1, 1])
    }

    @Test func theAttemptsHeaderIsParsedAsDocumented() {
        #expect(Job.attemptsHeader == "pushworker-attempts")
        #expect(Job.attempt(fromAttemptsHeader: nil) == 1)
        #expect(Job.attempt(fromAttemptsHeader: Array("0".utf8)) == 1)
        #expect(Job.attempt(fromAttemptsHeader: Array("007".utf8)) == 8)
        #expect(Job.attempt(fromAttemptsHeader: Array("41".utf8)) == 42)
        #expect(Job.attempt(fromAttemptsHeader: Array("1.5".utf8)) == 1)
        #expect(Job.attempt(fromAttemptsHeader: Array("٣".utf8)) == 1, "only ASCII digits")
    }

    /// The names and values of headers, comparable with `==`.
    static func flat(_ headers: RecordHeaders) -> [String] {
        headers.map { "\($0.name)=\($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "<null>")" }
    }

    @Test(.timeLimit(.minutes(1)))
    func eachResultComesWithTheInputRecordItAnswers() async throws {
        let collector = ResultCollector()
        let dispatcher = dispatcher(collector)
        let headers: [(name: String, value: [UInt8]?)] = [
            ("z-first", Array("1".utf8)), ("apns-id", Array("msg-routed".utf8)), ("a-dup", Array("x".utf8)),
            ("a-dup", Array("y".utf8)), ("empty-value", nil), ("binary", [0xFF, 0x00, 0xFE]),
            (Job.attemptsHeader, Array("4".utf8)),
        ]
        let binaryValue: [UInt8] = [0xC3, 0x28, 0x00, 0x7B]  // not UTF-8, not JSON
        let inputs = [
            record(Payload.silent(type: "failing", extra: #","contentId":"c-1""#), offset: 10, key: "device-1", headers: headers),
            record(Payload.silent(type: "instant"), offset: 11, key: "device-2", headers: Array(headers.reversed())),
            record(Self.invalidJSON, offset: 12, key: "device-3", headers: headers),
            record(nil, offset: 13, key: "device-4", headers: [("only", Array("one".utf8))]),
            record(binaryValue, offset: 14),
            record(Payload.silent(type: "nobody"), offset: 15, key: "", headers: []),
        ]
        dispatcher.submit(inputs)
        #expect(await idle(dispatcher))
        #expect(collector.count == inputs.count)
        let results = collector.all
        let handed = collector.allInputs
        #expect(handed.count == results.count)
        for (result, input) in zip(results, handed) {
            // The input handed with a result is the one the result answers.
            #expect(input.source == result.source)
            let original = try #require(inputs.first { $0.source == result.source })
            #expect(input.key == original.key, "key of offset \(result.source.offset)")
            #expect(input.value == original.value, "value of offset \(result.source.offset)")
            #expect(Self.flat(input.headers) == Self.flat(original.headers), "headers of offset \(result.source.offset)")
            #expect(input.receivedAtMs == original.receivedAtMs)
        }
        let byOffset = Dictionary(uniqueKeysWithValues: zip(results, handed).map { ($0.0.source.offset, $0.1) })
        #expect(byOffset[13]?.value == nil, "a null value stays null")
        #expect(byOffset[13]?.key == Array("device-4".utf8))
        #expect(byOffset[14]?.value == binaryValue)
        #expect(byOffset[14]?.key == nil)
        #expect(byOffset[15]?.key == [], "an empty key stays empty, not null")
        #expect(collector.result(offset: 10)?.result == .failed)
        #expect(collector.result(offset: 10)?.attempt == 5)
        #expect(collector.result(offset: 12)?.reason == .invalidPayload)
        #expect(collector.result(offset: 13)?.reason == .invalidPayload)
        #expect(collector.result(offset: 14)?.reason == .invalidPayload)
    }
}
