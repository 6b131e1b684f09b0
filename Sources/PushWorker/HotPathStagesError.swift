/// Why ``HotPathStages`` could not measure the stages.
package struct HotPathStagesError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of a ``HotPathStagesError``.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        package var description: String { name }
        /// Records, results or acknowledgements did not all arrive within ``HotPathStages``' patience (60 s).
        package static let timedOut = Code("timedOut")
        /// The dispatcher answered a record with something other than its result (a retry, a record sent to
        /// the retry topic): the configuration is not the bench's.
        package static let unexpectedOutput = Code("unexpectedOutput")
        /// Records were not marked done once their results were acknowledged.
        package static let notDone = Code("notDone")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened, with the counts.
    package var message: String

    /// Creates an error.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// "measuring the stages: " and the message.
    package var description: String { "measuring the stages: \(message)" }
}
