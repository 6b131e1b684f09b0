/// Parses `--name value`, `--name=value`, `--flag`, and the short `-x value` / `-x` forms, for one command.
///
/// Every command accepts `--help` and `-h`. An option may have long aliases (`--bootstrap-server` for
/// `--bootstrap-servers`, the spelling of Kafka's own tools) and one short name (`-b`); values and flags
/// are stored under the option's main name. An unknown option is refused with the closest known one
/// suggested (``Suggestion``).
struct ArgumentParser {
    /// An option a command accepts.
    struct Option {
        var name: String
        var takesValue: Bool
        var repeatable = false
        /// Other long names of the option (without `--`).
        var aliases: [String] = []
        /// Its one-letter name (`-b`), if any.
        var short: Character? = nil
    }

    let command: String
    let options: [Option]

    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []

    init(command: String, options: [Option]) {
        self.command = command
        self.options = options + [Option(name: "help", takesValue: false, short: "h")]
    }

    /// The options' main names as typed (`--name`), the candidates of a "did you mean".
    var spellings: [String] { options.map { "--\($0.name)" } }

    /// - Throws: ``CommandLineError`` (usage) for an unknown option, a missing value or a repeated option.
    mutating func parse(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            let typed: String
            let found: Option?
            var inlineValue: String?
            if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                typed = "--\(name)"
                found = options.first { $0.name == name || $0.aliases.contains(name) }
            } else if argument.hasPrefix("-"), argument.count >= 2 {
                var rest = argument.dropFirst()
                let letter = rest.removeFirst()
                if rest.first == "=" { rest.removeFirst() }
                if !rest.isEmpty { inlineValue = String(rest) }
                typed = "-\(letter)"
                found = options.first { $0.short == letter }
            } else {
                throw CommandLineError(.usage, "pushworker \(command): unexpected argument '\(argument)'; see 'pushworker \(command) --help'")
            }
            guard let option = found else {
                let hint = Suggestion.closest(to: typed, among: spellings).map { " (did you mean '\($0)'?)" } ?? ""
                throw CommandLineError(.usage, "pushworker \(command): unknown option '\(typed)'\(hint); see 'pushworker \(command) --help'")
            }
            let name = option.name
            if option.takesValue {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw CommandLineError(.usage, "pushworker \(command): option '\(typed)' needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                if !option.repeatable && values[name] != nil {
                    throw CommandLineError(.usage, "pushworker \(command): option '--\(name)' given more than once")
                }
                values[name, default: []].append(value)
            } else {
                if inlineValue != nil {
                    throw CommandLineError(.usage, "pushworker \(command): option '\(typed)' takes no value")
                }
                flags.insert(name)
            }
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// An integer option within `range`.
    /// - Throws: ``CommandLineError`` (usage) if it is not an integer in range.
    func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw CommandLineError(.usage, "pushworker \(command): --\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return number
    }

    /// A decimal option within `range`.
    func double(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), range.contains(number) else {
            throw CommandLineError(.usage, "pushworker \(command): --\(name) must be a number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return number
    }
}

extension ArgumentParser.Option {
    /// The brokers option of `produce`, `results`, `redrive`, `run` and `check-config`: `--bootstrap-servers`,
    /// also spelled `--bootstrap-server` (Kafka's own tools) and `-b` (kcat).
    static let bootstrapServers = ArgumentParser.Option(name: "bootstrap-servers", takesValue: true, aliases: ["bootstrap-server"], short: "b")
}
