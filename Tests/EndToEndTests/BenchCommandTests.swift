import Foundation
import PushWorkerTesting
import Testing

/// `pushworker bench` run as users run it, with few records: its existing lines, and the stage table of
/// the per-record path.
@Suite(.timeLimit(.minutes(3)))
struct BenchCommandTests {
    /// The stage names, in the order the table prints them.
    static let stageNames = ["poll + copy-out", "validate", "route + dispatch", "encode result", "produce", "delivery report + offset store"]

    /// One line of the stage table: name, ns/record, share in percent.
    struct Row {
        var name: String
        var nanoseconds: Double
        var share: Double
    }

    /// The table's rows, `all stages` included, parsed from the bench's stdout.
    static func rows(_ lines: [String]) -> [Row] {
        lines.compactMap { line -> Row? in
            guard line.hasPrefix("  "), line.hasSuffix("%") else { return nil }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3, let share = Double(fields[fields.count - 1].dropLast()), let ns = Double(fields[fields.count - 2]) else { return nil }
            return Row(name: fields.dropLast(2).joined(separator: " "), nanoseconds: ns, share: share)
        }
    }

    @Test func printsTheStageTableWithSharesThatAddUp() async throws {
        let records = 2000
        let run = try await runPushworker(["bench", "--records", String(records), "--latency-seconds", "0", "--skip-baseline"], timeout: .seconds(150))
        #expect(run.status == 0, "\(run.stderr)")
        // The existing output stays.
        #expect(run.stdout.contains { $0.hasPrefix("pushworker: ") && $0.contains("records/s") })
        #expect(run.stdout.contains { $0.hasPrefix("peak memory (max RSS): ") })
        #expect(run.stdout.contains { $0.hasPrefix("stages of the per-record path, each alone over the same \(records) records") })
        let rows = Self.rows(run.stdout)
        #expect(rows.map(\.name) == Self.stageNames + ["all stages"], "\(run.stdout)")
        let stages = rows.filter { $0.name != "all stages" }
        // Two stages are differences of two measurements (route + dispatch less validate, produce less encode):
        // with 2000 records, or under a sanitizer, they may come out as 0. The others are measured directly.
        let differences: Set<String> = ["route + dispatch", "produce"]
        for stage in stages {
            if differences.contains(stage.name) {
                #expect(stage.nanoseconds >= 0, "\(stage.name): \(run.stdout)")
            } else {
                #expect(stage.nanoseconds > 0, "\(stage.name): \(run.stdout)")
                #expect(stage.share > 0, "\(stage.name): \(run.stdout)")
            }
            // Plausible, not fast: 10 ms of CPU a record would be a unit mixed up, not a slow stage.
            #expect(stage.nanoseconds < 10_000_000, "\(stage.name): \(run.stdout)")
        }
        let shares = stages.reduce(0) { $0 + $1.share }
        #expect(abs(shares - 100) <= 0.5, "shares add up to \(shares): \(run.stdout)")
        let total = stages.reduce(0) { $0 + $1.nanoseconds }
        // Each figure is rounded to 1 ns.
        #expect(abs((rows.last?.nanoseconds ?? 0) - total) <= Double(stages.count), "\(run.stdout)")
    }
}
