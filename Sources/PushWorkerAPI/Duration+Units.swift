extension Duration {
    /// The duration in seconds, for Foundation's `TimeInterval` APIs.
    package var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (truncated).
    package var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
