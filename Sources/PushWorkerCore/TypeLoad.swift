extension JobDispatcher {
    /// The jobs of one payload `type` a dispatcher holds at one moment (``JobDispatcher/loadByType()``).
    public struct TypeLoad: Sendable, Equatable {
        /// The payload `type`, or `nil` for records without one.
        public var type: String?
        /// Jobs whose worker is running now (they hold a slot).
        public var running = 0
        /// Routed jobs waiting for a slot, their worker's `maxConcurrent` or their key (their budget has
        /// not started); jobs held until a later time are not counted.
        public var waiting = 0
        /// How long the oldest running job has held its slot, or `nil` when none runs.
        public var oldestRunningAge: Duration?

        /// Creates a load (default: no jobs).
        public init(type: String?, running: Int = 0, waiting: Int = 0, oldestRunningAge: Duration? = nil) {
            self.type = type
            self.running = running
            self.waiting = waiting
            self.oldestRunningAge = oldestRunningAge
        }
    }
}
