import Foundation
import PushWorkerCore
import Synchronization

/// Unbuffered, line-at-a-time writes to stdout and stderr, safe from any thread.
public enum Output {
    private static let lock = Mutex(())

    /// Writes one line to stdout at once (a `write(2)`, so a reader of a pipe sees it immediately).
    public static func line(_ text: String) {
        lock.withLock { _ in FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    }

    /// Writes raw bytes and a newline to stdout.
    public static func line(bytes: [UInt8]) {
        var data = Data(bytes)
        data.append(0x0A)
        lock.withLock { _ in FileHandle.standardOutput.write(data) }
    }

    /// `value` as JSON text with sorted keys and unescaped slashes (one line, or indented when `pretty`),
    /// as the commands print JSON.
    static func json(_ value: JSONValue, pretty: Bool = false) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes one line to stderr.
    public static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
