/// The Prometheus text exposition format, version 0.0.4
/// (<https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format>).
public enum PrometheusText {
    /// Renders metrics: per metric a `# HELP` and a `# TYPE` line, then one line per sample,
    /// `name{label="value",...} value`, ending with a newline. Metrics without samples are left out.
    ///
    /// Escaping: in help text `\` and newline become `\\` and `\n`; in label values `\`, `"` and newline
    /// become `\\`, `\"` and `\n`. Values: `+Inf`, `-Inf`, `NaN`, integers without a decimal point, other
    /// numbers in Swift's shortest round-tripping form (e.g. `0.005`, `1e-07`).
    public static func render(_ metrics: [MetricSnapshot]) -> String {
        var out = ""
        out.reserveCapacity(metrics.reduce(0) { $0 + 64 + $1.samples.count * 80 })
        for metric in metrics where !metric.samples.isEmpty {
            out += "# HELP \(metric.name) \(escapeHelp(metric.help))\n"
            out += "# TYPE \(metric.name) \(metric.type.rawValue)\n"
            for sample in metric.samples {
                out += sample.name
                if !sample.labels.isEmpty {
                    out += "{"
                    for (index, label) in sample.labels.enumerated() {
                        if index > 0 { out += "," }
                        out += label.name
                        out += "=\""
                        out += escapeLabelValue(label.value)
                        out += "\""
                    }
                    out += "}"
                }
                out += " "
                out += formatNumber(sample.value)
                out += "\n"
            }
        }
        return out
    }

    /// A help text with `\` and newline escaped.
    public static func escapeHelp(_ text: String) -> String { escape(text, quotes: false) }

    /// A label value with `\`, `"` and newline escaped.
    public static func escapeLabelValue(_ text: String) -> String { escape(text, quotes: true) }

    /// `text` with `\` and newline escaped, and `"` too when `quotes`.
    private static func escape(_ text: String, quotes: Bool) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x0A || (quotes && $0 == 0x22) }) else { return text }
        var out = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// A sample value or bucket bound as the format writes it: `+Inf`, `-Inf`, `NaN`, integers (below
    /// 2^53 in magnitude) without a decimal point, anything else in Swift's shortest form.
    public static func formatNumber(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Whether `name` is a valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidMetricName(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetter(first) || first == 0x5F || first == 0x3A else { return false }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == 0x5F || $0 == 0x3A }
    }

    /// Whether `name` is a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved).
    public static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.utf8.first, isLetter(first) || first == 0x5F, !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == 0x5F }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
}
