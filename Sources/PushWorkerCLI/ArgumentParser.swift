/// Parses `--name value`, `--name=value` and `--flag` arguments for one command.
struct ArgumentParser {
    /// An option a command accepts.
    struct Option {
        var name: String
        var takesValue: Bool
        var repeatable = false
    }

    let command: String
    let options: [Option]

    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []

    init(command: String, options: [Option]) {
        self.command = command
        self.options = options + [Option(name: "help", takesValue: false)]
    }

    /// - Throws: ``CommandLineError`` (usage) for an unknown option, a missing value or a repeated option.
    mutating func parse(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                throw CommandLineError(.usage, "pushworker \(command): unexpected argument '\(argument)'; see 'pushworker \(command) --help'")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw CommandLineError(.usage, "pushworker \(command): unknown option '--\(name)'; see 'pushworker \(command) --help'")
            }
            if option.takesValue {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw CommandLineError(.usage, "pushworker \(command): option '--\(name)' needs a value")
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
                    throw CommandLineError(.usage, "pushworker \(command): option '--\(name)' takes no value")
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
