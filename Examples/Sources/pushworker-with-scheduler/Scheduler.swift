import Foundation

/// A stand-in for a service of the application's own that runs beside pushworker (an HTTP API, a job
/// scheduler): it writes `scheduler started`, then `scheduler tick` every `interval`, until its task is
/// cancelled; then it writes `scheduler stopped` and returns.
struct Scheduler: Sendable {
    /// The time between ticks (default 1 s).
    var interval: Duration = .seconds(1)

    /// Ticks until cancelled.
    func run() async {
        Self.say("scheduler started")
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if !Task.isCancelled { Self.say("scheduler tick") }
        }
        Self.say("scheduler stopped")
    }

    /// Writes one line to stdout at once (unbuffered, so a reader of a pipe sees it).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
