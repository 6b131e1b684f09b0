import Foundation
import PushWorkerTesting
import Testing
@testable import PushWorkerCore

/// `RetryParking`, the dispatcher's parked keys without a lock, a thread or a clock: scenarios, and a
/// seeded model check that every output of a key is handed over once, in the order it was decided.
@Suite struct RetryParkingTests {
    static let key = Array("device-a".utf8)

    /// An output named by its offset (the record it forwards, or whose result it is).
    static func output(_ offset: Int64) -> DispatcherOutput {
        let input = InputRecord(source: source(offset), key: key, value: Payload.silent(type: "ok"), headers: [], receivedAtMs: 0)
        return .forward(input, Forward(kind: .follower, runs: 0, notBeforeMs: nil, messageId: "m\(offset)", origin: source(offset)))
    }

    static func offsets(_ outputs: [DispatcherOutput]?) -> [Int64] {
        (outputs ?? []).map { output in
            switch output {
            case .forward(let input, _): input.source.offset
            case .result(_, let input, _): input.source.offset
            }
        }
    }

    @Test func aParkedKeysRecordsFollowUntilEverythingIsReadBack() {
        var parking = RetryParking()
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 0, forward: Self.output(0)) == .placeHere)
        // Offset 1 is retried with one follower (2): both in transit.
        #expect(Self.offsets(parking.park(Self.key, outputs: [Self.output(1), Self.output(2)], expiresAtNs: 1_000)) == [1, 2])
        #expect(parking.takeDeferred(Self.key).isEmpty)
        // A later record follows: three in transit.
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 10, forward: Self.output(3)) == .follow)
        // Read back one by one: parked until the last.
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 20, forward: Self.output(1)) == .placeHere)
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 20, forward: Self.output(2)) == .placeHere)
        #expect(parking.count == 1)
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 20, forward: Self.output(3)) == .placeHere)
        #expect(parking.isEmpty)
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 30, forward: Self.output(4)) == .placeHere)
    }

    @Test func aParkingExpiresWhenItsRecordsAreReadElsewhere() {
        var parking = RetryParking()
        _ = parking.park(Self.key, outputs: [Self.output(1)], expiresAtNs: 100)
        _ = parking.takeDeferred(Self.key)
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 99, forward: Self.output(2)) == .follow)
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 100, forward: Self.output(3)) == .placeHere)
        #expect(parking.isEmpty)
    }

    @Test func recordsDecidedDuringAHandOverWaitBehindItAndAReadBackThenUnparks() {
        var parking = RetryParking()
        #expect(Self.offsets(parking.park(Self.key, outputs: [Self.output(1)], expiresAtNs: 1_000)) == [1])
        // Not yet handed over: a later record is kept behind it, and so is a second retry of the key.
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 1, forward: Self.output(2)) == .followDeferred)
        #expect(parking.park(Self.key, outputs: [Self.output(5)], expiresAtNs: 2_000) == nil)
        #expect(Self.offsets(parking.takeDeferred(Self.key)) == [2, 5])
        #expect(parking.takeDeferred(Self.key).isEmpty)
        #expect(parking.arrive(Self.key, fromRetryTopic: false, nowNs: 2, forward: Self.output(6)) == .follow)

        // The retry's copy read back while it is still handed over: the park stays for the hand-over, and
        // goes with it.
        var other = RetryParking()
        _ = other.park(Self.key, outputs: [Self.output(1)], expiresAtNs: 1_000)
        #expect(other.arrive(Self.key, fromRetryTopic: true, nowNs: 1, forward: Self.output(1)) == .placeHere)
        #expect(other.count == 1)
        #expect(other.takeDeferred(Self.key).isEmpty)
        #expect(other.isEmpty, "nothing in transit once the hand-over ended")
    }

    @Test func recordsWrittenBeforeALaterRetryFollowItAgain() {
        var parking = RetryParking()
        _ = parking.park(Self.key, outputs: [Self.output(1), Self.output(2)], expiresAtNs: 1_000)
        _ = parking.takeDeferred(Self.key)
        // 1 is read back and fails again before 2 is read back: 2 was written before the new retry.
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 1, forward: Self.output(1)) == .placeHere)
        _ = parking.park(Self.key, outputs: [Self.output(1)], expiresAtNs: 1_000)
        _ = parking.takeDeferred(Self.key)
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 2, forward: Self.output(2)) == .follow)
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 3, forward: Self.output(1)) == .placeHere)
        #expect(parking.arrive(Self.key, fromRetryTopic: true, nowNs: 4, forward: Self.output(2)) == .placeHere)
        #expect(parking.isEmpty)
    }

    /// Seeds per block (`PUSHWORKER_PARKING_SEEDS`, default 2 500: 20 000 sequences of up to 60 events).
    static let seedsPerBlock = ProcessInfo.processInfo.environment["PUSHWORKER_PARKING_SEEDS"].flatMap(UInt64.init) ?? 2_500

    @Test(arguments: 0..<8) func modelCheck(block: UInt64) async {
        // On a thread of its own: seconds of computing on the cooperative pool stall the other tests.
        let failure = await onOwnThread { () -> String? in
            for seed in block * Self.seedsPerBlock..<(block + 1) * Self.seedsPerBlock {
                if let failure = Self.check(seed: seed) { return failure }
            }
            return nil
        }
        if let failure { Issue.record(Comment(rawValue: failure)) }
    }

    /// One random life of two keys: records arrive from the input and back from the retry topic (first in,
    /// first out, as one partition of it), retries are decided, hand-overs are carried out step by step,
    /// time passes. What is handed over per key must be what was decided, in order, each once; a key with
    /// nothing in transit and no hand-over must not stay parked once a record of it arrives.
    /// - Returns: the first failure, or `nil`.
    static func check(seed: UInt64) -> String? {
        var random = SeededGenerator(seed: seed)
        var parking = RetryParking()
        let keys = [Array("a".utf8), Array("b".utf8)]
        var decided: [[Int64]] = [[], []]
        var handed: [[Int64]] = [[], []]
        var retryTopic: [[Int64]] = [[], []]
        var handingOver = [false, false]
        // The reference for records that follow a later retry again: flagged when a retry of their key is
        // decided while they are in the retry topic or kept behind a hand-over (they come back ahead of it).
        // Checked in lives whose parkings never expire (three in four): an expiry forgets the count.
        let expiring = Int.random(in: 0..<4, using: &random) == 0
        var deferredNow: [[Int64]] = [[], []]
        var followAgain: [Set<Int64>] = [[], []]
        var now: Int64 = 0
        var next: Int64 = 0
        var ok = true
        var failure: String?
        func fail(_ what: String) {
            failure = failure ?? "seed \(seed): \(what) (PUSHWORKER_PARKING_SEEDS and the seed replay it)"
            ok = false
        }
        func hand(_ k: Int, _ outputs: [DispatcherOutput]) {
            let offsets = Self.offsets(outputs)
            handed[k] += offsets
            retryTopic[k] += offsets
            deferredNow[k].removeAll { offsets.contains($0) }
        }
        // Records of each key placed here, in the key's line: the first runs; a retry of it parks the key and
        // takes the rest along as followers.
        var line: [[Int64]] = [[], []]
        func decide(_ k: Int, _ arrival: RetryParking.Arrival, _ offset: Int64) {
            switch arrival {
            case .placeHere: line[k].append(offset)
            case .follow:
                decided[k].append(offset)
                if handingOver[k] { fail("a record followed at once during a hand-over") }
                hand(k, [output(offset)])
            case .followDeferred:
                decided[k].append(offset)
                deferredNow[k].append(offset)
                if !handingOver[k] { fail("a record deferred with no hand-over") }
            }
        }
        for _ in 0..<Int.random(in: 5...60, using: &random) where ok {
            let k = Int.random(in: 0...1, using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0...2:
                next += 1
                decide(k, parking.arrive(keys[k], fromRetryTopic: false, nowNs: now, forward: output(next)), next)
            case 3...4:
                guard !retryTopic[k].isEmpty else { continue }
                let offset = retryTopic[k].removeFirst()
                let arrival = parking.arrive(keys[k], fromRetryTopic: true, nowNs: now, forward: output(offset))
                if !expiring, (arrival != .placeHere) != followAgain[k].contains(offset) {
                    fail("key \(k): offset \(offset) read back: \(arrival), expected to follow again: \(followAgain[k].contains(offset))")
                }
                followAgain[k].remove(offset)
                decide(k, arrival, offset)
            case 5:
                // The first record of the key's line ends well.
                if !line[k].isEmpty { line[k].removeFirst() }
            case 6:
                // It fails retryably: it goes to the retry topic with the rest of the line as followers.
                guard !line[k].isEmpty else { continue }
                let outputs = line[k].map { output($0) }
                decided[k] += line[k]
                line[k] = []
                followAgain[k].formUnion(retryTopic[k])
                followAgain[k].formUnion(deferredNow[k])
                let expires = expiring ? now + Int64.random(in: 1...50, using: &random) : .max
                if let now = parking.park(keys[k], outputs: outputs, expiresAtNs: expires) {
                    if handingOver[k] { fail("a second hand-over of one key") }
                    handingOver[k] = true
                    hand(k, now)
                } else {
                    if !handingOver[k] { fail("kept behind a hand-over that is not under way") }
                    deferredNow[k] += Self.offsets(outputs)
                }
            case 7...8:
                guard handingOver[k] else { continue }
                let batch = parking.takeDeferred(keys[k])
                if batch.isEmpty { handingOver[k] = false } else { hand(k, batch) }
                if !expiring, !handingOver[k], retryTopic[k].isEmpty, parking.parks[keys[k]] != nil {
                    fail("key \(k) still parked after its hand-over with nothing in transit")
                }
            default:
                now += Int64.random(in: 1...20, using: &random)
            }
            for k in 0...1 where handed[k] != Array(decided[k].prefix(handed[k].count)) {
                fail("key \(k): handed \(handed[k]), decided \(decided[k])")
            }
            // A park stays only for a hand-over, for records in transit, or expired until its key's next record.
            for k in 0...1 {
                if let park = parking.parks[keys[k]], !park.handingOver, park.inTransit <= 0, park.expiresAtNs > now {
                    fail("key \(k) parked with nothing in transit and no hand-over")
                }
            }
        }
        // Every hand-over carried to its end: everything decided is handed over, in order.
        for k in 0...1 where ok {
            while handingOver[k] {
                let batch = parking.takeDeferred(keys[k])
                if batch.isEmpty { handingOver[k] = false } else { hand(k, batch) }
            }
            if handed[k] != decided[k] { fail("key \(k): handed \(handed[k]) at the end, decided \(decided[k])") }
            // Read back whatever is in transit (what follows again included): the key is free then, and
            // an expired one is forgotten at its next record.
            var reads = 0
            while ok, !retryTopic[k].isEmpty {
                reads += 1
                if reads > 1_000 { fail("key \(k): its records keep following each other through the retry topic") }
                let offset = retryTopic[k].removeFirst()
                decide(k, parking.arrive(keys[k], fromRetryTopic: true, nowNs: now, forward: output(offset)), offset)
            }
            if expiring { _ = parking.arrive(keys[k], fromRetryTopic: false, nowNs: .max, forward: output(-1)) }
            if ok, parking.parks[keys[k]] != nil { fail("key \(k) still parked with nothing in transit and no hand-over") }
        }
        return failure
    }
}
