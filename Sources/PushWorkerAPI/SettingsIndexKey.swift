/// The coding key of a list element (shown as `[index]` in paths).
struct SettingsIndexKey: CodingKey {
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.index = intValue }
    var stringValue: String { "[\(index)]" }
    var intValue: Int? { index }
}
