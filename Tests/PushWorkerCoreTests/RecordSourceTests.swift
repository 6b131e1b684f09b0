import Testing
@testable import PushWorkerCore

/// `RecordSource.defaultMessageId` writes `<topic>-<partition>-<offset>` into the string itself: the same
/// text as the interpolation it replaces, at every edge of the integers and for any topic name.
@Suite struct RecordSourceTests {
    @Test("the default message id is \"<topic>-<partition>-<offset>\"", arguments: [
        ("pushes", 0, 0), ("pushes", 3, 12345), ("bench-pushes", 7, 9_999_999_999),
        ("", 0, 0), ("t", -1, -1), ("t", Int32.max, Int64.max), ("t", Int32.min, Int64.min),
        ("t", 9, 10), ("t", 10, 99), ("t", 100, 1_000_000_000_000_000_000),
        ("Grüße-🚀", 2, 42), (String(repeating: "x", count: 249), 1, 1), ("nul\u{0}topic", 1, 2),
    ] as [(String, Int32, Int64)])
    func defaultMessageId(_ topic: String, _ partition: Int32, _ offset: Int64) {
        let source = RecordSource(topic: topic, partition: partition, offset: offset)
        #expect(source.defaultMessageId == "\(topic)-\(partition)-\(offset)")
        #expect(Array(source.defaultMessageId.utf8) == Array("\(topic)-\(partition)-\(offset)".utf8))
    }

    @Test func everyDigitCount() {
        var offset: Int64 = 1
        for exponent in 0...18 {  // 10^0 ... 10^18 (10^19 is past Int64.max)
            for value in [offset - 1, offset, offset + 1, -offset] {
                #expect(RecordSource(topic: "p", partition: Int32(truncatingIfNeeded: value), offset: value).defaultMessageId
                    == "p-\(Int32(truncatingIfNeeded: value))-\(value)")
            }
            if exponent < 18 { offset *= 10 }
        }
    }
}
