extension Duration {
    /// The longest time a configuration setting takes effect as: 2 147 483 647 ms (about 24.8 days), the
    /// most a file's `…Ms` key accepts (`Int32.max`, librdkafka's own limit for timeouts).
    static let longestSetting: Duration = .milliseconds(Int32.max)

    /// This duration as a budget or an http worker's request timeout takes effect: clamped to 1 ms (the
    /// file's minimum for `defaultBudgetMs`, `budgetMs`, `timeoutMs`) … ``longestSetting``; below 1 ms,
    /// zero and negative count as 1 ms. Sub-millisecond parts above 1 ms are kept.
    var asBudgetSetting: Duration { min(max(self, .milliseconds(1)), .longestSetting) }

    /// This duration as a wait takes effect (`drainTimeoutMs`, `terminationGraceMs`, `delayMs`): clamped to
    /// zero … ``longestSetting``; negative counts as zero. Sub-millisecond parts are kept.
    var asWaitSetting: Duration { min(max(self, .zero), .longestSetting) }
}
