import Foundation
import Synchronization

/// The last lines an exec worker's program wrote to stderr, kept (bounded) for the result's `detail` and for
/// the warning logged when the program fails, and whether its stderr has reached end of file.
final class StderrTail: Sendable {
    private struct State {
        var lines: [String] = []
        var bytes = 0
        var closed = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// The most lines kept (for the warning).
    static let keptLines = 20
    /// The most bytes kept, over all kept lines (for the warning).
    static let keptBytes = 4096
    /// The most lines in a result's `detail`.
    static let detailLines = 3
    /// The most bytes of stderr in a result's `detail`.
    static let detailBytes = 512

    /// Adds one line (without its newline); blank lines are not kept.
    func add(_ line: String) {
        let line = line.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "" : Self.suffix(line, bytes: Self.keptBytes)
        guard !line.isEmpty else { return }
        state.withLock { state in
            state.lines.append(line)
            state.bytes += line.utf8.count
            while state.lines.count > Self.keptLines || state.bytes > Self.keptBytes, state.lines.count > 1 {
                state.bytes -= state.lines.removeFirst().utf8.count
            }
        }
    }

    /// Marks end of file and wakes ``waitForEnd(atMost:)``.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until stderr has reached end of file, or `limit` has passed (a program may leave a child
    /// holding its stderr open).
    func waitForEnd(atMost limit: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.close()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let closed = state.withLock { state -> Bool in
                if state.closed { return true }
                state.waiter = continuation
                return false
            }
            if closed { continuation.resume() }
        }
        timer.cancel()
    }

    /// The kept lines, oldest first.
    var lines: [String] { state.withLock { $0.lines } }

    /// The last ``detailLines`` lines, joined by newlines, at most ``detailBytes`` bytes (cut at a
    /// character boundary, marked with `…`), or `nil` when the program wrote nothing to stderr.
    var detail: String? {
        let text = lines.suffix(Self.detailLines).joined(separator: "\n")
        return text.isEmpty ? nil : Self.suffix(text, bytes: Self.detailBytes)
    }

    /// The end of `text` in at most `bytes` UTF-8 bytes, whole characters only, with `…` in front when cut.
    static func suffix(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var start = text.utf8.index(text.utf8.endIndex, offsetBy: -max(0, bytes - 3))
        while start < text.endIndex, start.samePosition(in: text) == nil { text.utf8.formIndex(after: &start) }
        return "…" + text[start...]
    }
}
