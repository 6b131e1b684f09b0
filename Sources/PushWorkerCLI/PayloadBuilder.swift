import Foundation
import PushWorkerCore

/// Builds an APNs-style background payload from `--type` and `--set` flags.
enum PayloadBuilder {
    /// - Throws: ``CommandLineError`` (usage) for a `--set` without `=`.
    static func build(type: String?, sets: [String]) throws -> [UInt8] {
        var members: [(String, JSONValue)] = [("aps", .object(["content-available": .int(1)]))]
        if let type { members.append(("type", .string(type))) }
        for item in sets {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw CommandLineError(.usage, "pushworker produce: --set must be KEY=VALUE, got '\(item)'")
            }
            let key = String(item[..<equals])
            let text = String(item[item.index(after: equals)...])
            let value = (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .string(text)
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var out = "{"
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { out += "," }
            let keyJSON = (try? encoder.encode(key)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
            let valueJSON = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
            out += "\(keyJSON):\(valueJSON)"
        }
        return Array((out + "}").utf8)
    }
}
