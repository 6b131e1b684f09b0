import Foundation

/// A directory holding the latest content, one file per `contentId`.
public struct ContentDirectory: Sendable {
    /// The directory (created on the first write).
    public let url: URL

    /// Creates the store for the directory at `url`.
    public init(_ url: URL) {
        self.url = url
    }

    /// Writes `body` to `<directory>/<contentId>` (the id percent-encoded into one file name, so it never
    /// leaves the directory), atomically.
    /// - Throws: Foundation's file errors.
    public func write(_ body: Data, for contentId: String) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try body.write(to: url.appendingPathComponent(Self.fileName(for: contentId)), options: .atomic)
    }

    /// The file name of `contentId`: letters, digits, `-`, `_` and `.` as they are, anything else
    /// percent-encoded; a leading `.` is `%2E`.
    public static func fileName(for contentId: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.")
        var name = contentId.addingPercentEncoding(withAllowedCharacters: allowed) ?? "content"
        if name.hasPrefix(".") { name = "%2E" + name.dropFirst() }
        return name
    }
}
