/// A command-line failure with its exit status: 2 for bad flags (usage), 1 for runtime failures.
public struct CommandLineError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of a ``CommandLineError``.
    public struct Code: Hashable, Sendable {
        /// The process exit status.
        public let exitStatus: Int32
        private init(_ exitStatus: Int32) { self.exitStatus = exitStatus }
        /// Bad flags or arguments: exit status 2.
        public static let usage = Code(2)
        /// A runtime failure: exit status 1.
        public static let failure = Code(1)
    }

    /// The kind.
    public var code: Code
    /// One line: what went wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
