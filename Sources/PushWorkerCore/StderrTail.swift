import Foundation
import Synchronization

/// The last lines an exec worker's program wrote to stderr, kept (bounded) for the result's `detail` and for
/// the warning logged when the program fails, and whether its stderr has reached end of file.
final class StderrTail: Sendable {
    private struct State {
        var lines: [String] = []
        var bytes = 0
        var closed = false
        /// Lines added so far (blank ones included): whether stderr is still coming.
        var received = 0
        var waiter: CheckedContinuation<Void, Never>?
        /// Set when the current ``StderrTail/waitForEnd(atMost:)`` has timed out (reset at each call).
        var timedOut = false
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
        guard !line.isEmpty else {
            state.withLock { $0.received += 1 }
            return
        }
        state.withLock { state in
            state.received += 1
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

    /// Whether stderr has reached end of file.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Lines added so far, blank ones included.
    var received: Int { state.withLock { $0.received } }

    /// Waits until stderr has reached end of file, or `limit` has passed (a program may leave a child
    /// holding its stderr open). Can be called again after a timeout.
    func waitForEnd(atMost limit: Duration) async {
        state.withLock { $0.timedOut = false }
        let timer = Task { [weak self] in
            // Cancelled once the wait is over: then it must not wake a later wait.
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            self?.wakeWaiter()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let closed = state.withLock { state -> Bool in
                if state.closed || state.timedOut { return true }
                state.waiter = continuation
                return false
            }
            if closed { continuation.resume() }
        }
        timer.cancel()
    }

    /// Resumes a waiting ``waitForEnd(atMost:)`` without marking end of file.
    private func wakeWaiter() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.timedOut = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits for end of file while lines keep coming: up to `idle` after the last line read, at most
    /// `limit` in all. A program's stderr is read by the ProcessEventLoop's thread, which on a loaded machine
    /// may still be working through what the program wrote before it exited.
    func waitForEnd(idle: Duration, atMost limit: Duration) async {
        let deadline = ContinuousClock.now.advanced(by: limit)
        var seen = received
        while true {
            await waitForEnd(atMost: min(idle, max(.zero, ContinuousClock.now.duration(to: deadline))))
            let now = received
            if isClosed || now == seen || ContinuousClock.now >= deadline { return }
            seen = now
        }
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
