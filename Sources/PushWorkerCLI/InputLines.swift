import Foundation
import PushWorkerCore

/// The records of `produce --file`: one per non-empty line of a JSON Lines file, with the line numbers,
/// and the warnings for lines that the service would answer `failed` / `invalidPayload`.
struct InputLines {
    /// One record: its value (the line without its `\n` or `\r\n`) and its 1-based line number.
    struct Line: Equatable {
        var number: Int
        var value: [UInt8]
    }

    /// The non-empty lines, in file order.
    var lines: [Line]

    /// At most this many lines get a warning of their own; the rest are counted in one more line.
    static let warnedLines = 20

    /// Splits `data` into lines (LF, or CR LF), skipping empty ones.
    init(_ data: Data) {
        var lines: [Line] = []
        var number = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            let value = Array(line.last == 0x0D ? line.dropLast() : line)
            if !value.isEmpty { lines.append(Line(number: number, value: value)) }
        }
        self.lines = lines
    }

    /// Reads `path` whole (`-` reads stdin).
    /// - Throws: ``CommandLineError`` (failure) naming the file and the system's reason, e.g.
    ///   `cannot read pushes.jsonl: No such file or directory`.
    static func read(_ path: String, command: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CommandLineError(.failure, "pushworker \(command): cannot read \(path): \(String(cString: strerror(errno)))")  // NUL-safe: strerror's own text
        }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR { continue }
                throw CommandLineError(.failure, "pushworker \(command): cannot read \(path): \(String(cString: strerror(errno)))")  // NUL-safe: strerror's own text
            }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// One warning per line (at most ``warnedLines``, then a count of the rest) that is not a JSON object in
    /// valid UTF-8 (contract section 2, row 2: such a record gets `failed` / `invalidPayload`); lines are
    /// sent anyway, as invalid records are a legitimate test input. When the lines are one JSON document
    /// spread over several lines (a pretty-printed file), a last line says how to turn it into JSON Lines.
    /// `file` names the input in the messages.
    func warnings(file: String) -> [String] {
        let validator = PayloadValidator(maxPayloadBytes: .max)
        var invalid: [(Int, String)] = []
        for line in lines {
            if case let .rejected(_, reason, detail) = validator.validate(value: line.value, apnsExpiration: nil, nowMs: 0), reason == .invalidPayload {
                invalid.append((line.number, detail))
            }
        }
        var warnings = invalid.prefix(Self.warnedLines).map { number, detail in
            "pushworker produce: warning: \(file) line \(number) is not a JSON object (\(detail)); sent as is, it will get failed/invalidPayload"
        }
        if invalid.count > Self.warnedLines {
            warnings.append("pushworker produce: warning: \(invalid.count - Self.warnedLines) more lines of \(file) are not JSON objects (\(invalid.count) in all); sent as is")
        }
        if invalid.count > 0, lines.count > 1 {
            let joined = Array(lines.map(\.value).joined(separator: [0x0A]))
            switch JSONValue.parse(joined) {
            case .object?:
                warnings.append("pushworker produce: warning: \(file) holds one JSON object over \(lines.count) lines; --file sends one record per line (JSON Lines): write each object on one line, e.g. jq -c . \(file)")
            case .array?:
                warnings.append("pushworker produce: warning: \(file) holds one JSON array over \(lines.count) lines; --file sends one record per line (JSON Lines): write each object on one line, e.g. jq -c '.[]' \(file)")
            default:
                break
            }
        }
        return warnings
    }
}
