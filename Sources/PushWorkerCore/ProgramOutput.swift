import Foundation
import Synchronization

/// A program's stdout as the exec worker keeps it: the first `limit` bytes; the rest is read and dropped, so
/// the program never blocks on a full pipe.
final class BoundedOutput: Sendable {
    private let limit: Int
    private let bytes = Mutex<[UInt8]>([])

    init(limit: Int) { self.limit = limit }

    /// Keeps as much of `chunk` as fits.
    func append(_ chunk: [UInt8]) {
        bytes.withLock { bytes in
            if bytes.count < limit { bytes.append(contentsOf: chunk.prefix(limit - bytes.count)) }
        }
    }

    /// What was kept.
    var data: Data { Data(bytes.withLock { $0 }) }
}

/// Splits a program's stderr into lines as chunks arrive and logs each one at `info` (at most
/// ``ExecWorker/maxOutputBytes`` per run; a longer line is logged in pieces of that size), keeping the last
/// ones in a ``StderrTail`` (also beyond the logged bytes: a traceback comes last).
final class StderrLines: Sendable {
    private struct State {
        var pending: [UInt8] = []
        var logged = 0
    }
    private let state = Mutex(State())
    private let logger: PushWorkerLogger
    private let metadata: [String: String]
    private let tail: StderrTail

    init(logger: PushWorkerLogger, metadata: [String: String], tail: StderrTail) {
        self.logger = logger
        self.metadata = metadata
        self.tail = tail
    }

    /// Adds a chunk read from stderr; logs the lines it completes.
    func add(_ chunk: [UInt8]) {
        let lines = state.withLock { state -> [ArraySlice<UInt8>] in
            state.pending.append(contentsOf: chunk)
            var lines: [ArraySlice<UInt8>] = []
            var start = state.pending.startIndex
            while let newline = state.pending[start...].firstIndex(of: 0x0A) {
                lines.append(state.pending[start..<newline])
                start = newline + 1
            }
            let rest = Array(state.pending[start...])
            if rest.count > ExecWorker.maxOutputBytes {  // a very long line: log what came so far
                lines.append(rest[...])
                state.pending = []
            } else {
                state.pending = rest
            }
            return lines
        }
        for line in lines { emit(line) }
    }

    /// Logs what is left after the last newline (stderr has ended).
    func finish() {
        let rest = state.withLock { state -> [UInt8] in
            defer { state.pending = [] }
            return state.pending
        }
        if !rest.isEmpty { emit(rest[...]) }
    }

    private func emit(_ line: ArraySlice<UInt8>) {
        var text = String(decoding: line, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        tail.add(text)
        let logged = state.withLock { state -> Int? in
            guard state.logged < ExecWorker.maxOutputBytes else { return nil }
            state.logged += line.count + 1
            return state.logged
        }
        guard let logged else { return }
        logger.info(logged > ExecWorker.maxOutputBytes ? "\(text) [stderr beyond \(ExecWorker.maxOutputBytes) bytes dropped]" : text, metadata: metadata)
    }
}

/// Lets something happen at most once per interval, e.g. a warning that would otherwise repeat for each job.
final class RateLimit: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(every interval: Duration) { self.interval = interval }

    /// Whether the interval has passed since the last time this returned `true` (then it starts again).
    func due(now: ContinuousClock.Instant = .now) -> Bool {
        last.withLock { last in
            if let previous = last, previous.duration(to: now) < interval { return false }
            last = now
            return true
        }
    }
}
