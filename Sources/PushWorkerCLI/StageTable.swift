import Foundation
import PushWorker

/// The table `pushworker bench` prints of the per-record path's stages (``HotPathStages``): each stage's
/// CPU time per record and its share of the stages' sum.
enum StageTable {
    /// The table's lines: a heading naming `records`, one line per stage (name, ns/record, share in
    /// percent of the sum), then the sum (100 %).
    static func lines(_ stages: [HotPathStages.Stage], records: Int) -> [String] {
        let total = stages.reduce(0) { $0 + $1.nanosecondsPerRecord }
        let width = max(30, stages.map(\.name.count).max() ?? 0)
        func row(_ name: String, _ ns: String, _ share: String) -> String {
            "  " + name.padding(toLength: width, withPad: " ", startingAt: 0) + " " + String(repeating: " ", count: max(0, 10 - ns.count)) + ns
                + String(repeating: " ", count: max(0, 9 - share.count)) + share
        }
        var lines = ["stages of the per-record path, each alone over the same \(records) records (CPU time of the thread running it):"]
        lines.append(row("stage", "ns/record", "share"))
        for stage in stages {
            let share = total > 0 ? stage.nanosecondsPerRecord / total * 100 : 0
            lines.append(row(stage.name, String(format: "%.0f", stage.nanosecondsPerRecord), String(format: "%.1f%%", share)))
        }
        lines.append(row("all stages", String(format: "%.0f", total), total > 0 ? "100.0%" : "0.0%"))
        return lines
    }
}
