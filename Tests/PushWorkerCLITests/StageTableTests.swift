import PushWorker
@testable import PushWorkerCLI
import Testing

/// The bench's stage table: shares of the stages' sum, and the sum.
struct StageTableTests {
    @Test func sharesArePartsOfTheSum() {
        let stages = [
            HotPathStages.Stage(name: "poll + copy-out", nanosecondsPerRecord: 100),
            HotPathStages.Stage(name: "validate", nanosecondsPerRecord: 300),
            HotPathStages.Stage(name: "delivery report + offset store", nanosecondsPerRecord: 600),
        ]
        let lines = StageTable.lines(stages, records: 42)
        #expect(lines.first == "stages of the per-record path, each alone over the same 42 records (CPU time of the thread running it):")
        func fields(_ line: String) -> [String] { line.split(separator: " ").map(String.init) }
        #expect(Array(fields(lines[2]).suffix(2)) == ["100", "10.0%"])
        #expect(Array(fields(lines[3]).suffix(2)) == ["300", "30.0%"])
        #expect(Array(fields(lines[4]).suffix(2)) == ["600", "60.0%"])
        #expect(lines[4].hasPrefix("  delivery report + offset store "))
        #expect(Array(fields(lines[5])) == ["all", "stages", "1000", "100.0%"])
        // Columns line up.
        #expect(Set(lines.dropFirst().map(\.count)).count == 1)
    }

    @Test func noTimeMeasuredGivesNoShare() {
        let lines = StageTable.lines([HotPathStages.Stage(name: "validate", nanosecondsPerRecord: 0)], records: 1)
        #expect(Array(lines[2].split(separator: " ").suffix(2)) == ["0", "0.0%"])
        #expect(Array(lines[3].split(separator: " ").suffix(2)) == ["0", "0.0%"])
    }
}
