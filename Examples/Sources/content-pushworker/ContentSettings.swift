import Foundation
import PushWorkerService

/// The content worker's own settings, read from the environment at startup.
enum ContentSettings {
    /// Parses `CONTENT_BASE_URL`.
    /// - Throws: ``ConfigurationError`` naming the variable when it is missing or not an http(s) URL, so
    ///   `run`, `dev` and `check-config` refuse to start rather than fail on the first record.
    static func baseURL(_ value: String?) throws -> URL {
        guard let value, !value.isEmpty else {
            throw ConfigurationError(.invalidValue, key: "CONTENT_BASE_URL",
                                     "is not set; export CONTENT_BASE_URL=https://cdn.example.com/content")
        }
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else {
            throw ConfigurationError(.invalidValue, key: "CONTENT_BASE_URL", "must be an http or https URL, got '\(value)'")
        }
        return url
    }

    /// Writes new content to `<directory>/<contentId>` (the id percent-encoded into one file name),
    /// atomically.
    static func write(_ body: Data, for contentId: String, in directory: URL) throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.")
        var name = contentId.addingPercentEncoding(withAllowedCharacters: allowed) ?? "content"
        if name.hasPrefix(".") { name = "%2E" + name.dropFirst() }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try body.write(to: directory.appendingPathComponent(name), options: .atomic)
    }
}
