import Foundation

extension JSONValue {
    /// The value as JSON text with sorted keys and unescaped slashes: one line, or indented when `pretty`
    /// (how the commands print JSON and how `check-config` shows the effective configuration).
    package func jsonText(pretty: Bool = false) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
