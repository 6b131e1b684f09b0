import PushWorkerMetrics
import Testing

/// The Prometheus text exposition format 0.0.4 as rendered by `MetricsRegistry`.
@Suite struct ExpositionTests {
    @Test func countersAndGaugesRenderHelpTypeAndSamples() throws {
        let registry = MetricsRegistry()
        let consumed = try registry.counter("app_records_total", help: "Records taken.")
        let inFlight = try registry.gauge("app_in_flight", help: "Running now.")
        consumed.increment(by: 3)
        consumed.increment()
        inFlight.set(2)
        inFlight.add(-0.5)
        #expect(registry.exposition() == """
            # HELP app_records_total Records taken.
            # TYPE app_records_total counter
            app_records_total 4
            # HELP app_in_flight Running now.
            # TYPE app_in_flight gauge
            app_in_flight 1.5

            """)
    }

    @Test func labelValuesAndHelpAreEscaped() throws {
        let registry = MetricsRegistry()
        let results = try registry.counter("app_results_total", help: "Results \\ by\ntype.", labels: ["type", "reason"])
        results.increment(labels: ["a\"b", "back\\slash\nnewline"])
        let text = registry.exposition()
        #expect(text.contains(#"# HELP app_results_total Results \\ by\ntype."#))
        #expect(text.contains(#"app_results_total{type="a\"b",reason="back\\slash\nnewline"} 1"#))
        #expect(!text.dropLast().contains("\n\n"))
        #expect(text.split(separator: "\n").count == 3, "no raw newline inside a line")
    }

    @Test func seriesAreOrderedByLabelValuesAndEmptyMetricsAreLeftOut() throws {
        let registry = MetricsRegistry()
        let results = try registry.counter("app_results_total", help: "h", labels: ["type"])
        _ = try registry.counter("app_unused_total", help: "never incremented")
        results.increment(labels: ["zeta"])
        results.increment(labels: ["alpha"])
        results.increment(labels: [""])
        let lines = registry.exposition().split(separator: "\n").map(String.init)
        #expect(lines == [
            "# HELP app_results_total h", "# TYPE app_results_total counter",
            #"app_results_total{type=""} 1"#, #"app_results_total{type="alpha"} 1"#, #"app_results_total{type="zeta"} 1"#,
        ])
    }

    @Test func histogramBucketsAreCumulativeWithInfSumAndCount() throws {
        let registry = MetricsRegistry()
        let duration = try registry.histogram("app_duration_seconds", help: "Run time.", labels: ["type"], buckets: [0.25, 0.5, 1])
        for value in [0.125, 0.25, 0.375, 0.75, 0.875, 2, 30] { duration.observe(value, labels: ["ping"]) }
        duration.observe(.nan, labels: ["ping"])  // ignored
        let lines = registry.exposition().split(separator: "\n").map(String.init)
        #expect(lines == [
            "# HELP app_duration_seconds Run time.",
            "# TYPE app_duration_seconds histogram",
            #"app_duration_seconds_bucket{type="ping",le="0.25"} 2"#,
            #"app_duration_seconds_bucket{type="ping",le="0.5"} 3"#,
            #"app_duration_seconds_bucket{type="ping",le="1"} 5"#,
            #"app_duration_seconds_bucket{type="ping",le="+Inf"} 7"#,
            #"app_duration_seconds_sum{type="ping"} 34.375"#,
            #"app_duration_seconds_count{type="ping"} 7"#,
        ])
        #expect(duration.count(labels: ["ping"]) == 7)
    }

    @Test func defaultDurationBucketsRenderAsPrometheusWritesThem() throws {
        let registry = MetricsRegistry()
        let duration = try registry.histogram("app_seconds", help: "h")
        duration.observe(0)
        let bounds = registry.exposition().split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("app_seconds_bucket") else { return nil }
            return line.split(separator: "\"").dropFirst().first.map(String.init)
        }
        #expect(bounds == [".005", ".01", ".025", ".05", ".1", ".25", ".5", "1", "2.5", "5", "10", "30", "60", "+Inf"].map { $0.hasPrefix(".") ? "0" + $0 : $0 })
    }

    @Test func countersOnlyGoUp() throws {
        let registry = MetricsRegistry()
        let counter = try registry.counter("app_events_total", help: "h")
        counter.increment(by: 2)
        counter.increment(by: -1)
        counter.increment(by: .nan)
        counter.increment(by: .infinity)
        #expect(counter.value() == 2)
        var previous = 0.0
        for _ in 0..<100 {
            counter.increment(by: 0.25)
            let now = try #require(counter.value())
            #expect(now > previous)
            previous = now
        }
        #expect(counter.value() == 27)
    }

    @Test func seriesHandlesAndBatches() throws {
        let registry = MetricsRegistry()
        let counter = try registry.counter("app_results_total", help: "h", labels: ["result"])
        let other = try registry.counter("app_other_total", help: "h", labels: ["result"])
        let newData = counter.series(["newData"])
        let failed = counter.series(["failed"])
        #expect(counter.value(labels: ["failed"]) == 0, "a series handle exports the series at 0")
        counter.increment([newData, newData, failed])
        counter.increment(newData, by: 2)
        other.increment(newData)           // a handle of another metric is ignored
        _ = counter.series(["too", "many"])  // wrong label count: ignored
        counter.increment(labels: [])        // wrong label count: ignored
        #expect(counter.value(labels: ["newData"]) == 4)
        #expect(counter.value(labels: ["failed"]) == 1)
        #expect(other.value(labels: ["newData"]) == nil)
        #expect(counter.snapshot().samples.count == 2)
    }

    @Test func labelCapSendsValuesBeyondTheLimitToTheOverflowSeries() throws {
        let registry = MetricsRegistry()
        let results = try registry.counter("app_results_total", help: "h", labels: ["type", "reason"], cap: LabelCap(label: "reason", per: "type", limit: 2))
        for reason in ["a", "b", "c", "d", "a"] { results.increment(labels: ["t1", reason]) }
        for reason in ["x", "y", "z"] { results.increment(labels: ["t2", reason]) }
        results.increment(labels: ["t1", "(other)"])
        #expect(results.value(labels: ["t1", "a"]) == 2)
        #expect(results.value(labels: ["t1", "b"]) == 1)
        #expect(results.value(labels: ["t1", "c"]) == nil)
        #expect(results.value(labels: ["t1", "(other)"]) == 3)
        #expect(results.value(labels: ["t2", "(other)"]) == 1)
        #expect(results.snapshot().samples.count == 6)
    }

    @Test func gaugesCanBeReplacedAndRemoved() throws {
        let registry = MetricsRegistry()
        let lag = try registry.gauge("app_lag", help: "h", labels: ["topic", "partition"])
        lag.replaceAll([(["t", "0"], 5), (["t", "1"], 7)])
        lag.replaceAll([(["t", "1"], 0)])
        #expect(lag.value(labels: ["t", "0"]) == nil)
        #expect(lag.value(labels: ["t", "1"]) == 0)
        lag.remove(labels: ["t", "1"])
        #expect(lag.snapshot().samples.isEmpty)
        #expect(registry.exposition().isEmpty)
    }

    @Test func numbersAreFormattedForPrometheus() {
        #expect(PrometheusText.formatNumber(0) == "0")
        #expect(PrometheusText.formatNumber(-3) == "-3")
        #expect(PrometheusText.formatNumber(1e15) == "1000000000000000")
        #expect(PrometheusText.formatNumber(0.25) == "0.25")
        #expect(PrometheusText.formatNumber(.infinity) == "+Inf")
        #expect(PrometheusText.formatNumber(-.infinity) == "-Inf")
        #expect(PrometheusText.formatNumber(.nan) == "NaN")
        #expect(Double(PrometheusText.formatNumber(1e-7)) == 1e-7)
        #expect(Double(PrometheusText.formatNumber(1e300)) == 1e300)
    }

    @Test func collectHooksRunBeforeRendering() throws {
        let registry = MetricsRegistry()
        let gauge = try registry.gauge("app_queue", help: "h")
        registry.onCollect { gauge.set(42) }
        #expect(registry.exposition().contains("app_queue 42\n"))
    }

    @Test("bad definitions are refused", arguments: [
        ("9bad", [String](), MetricsError.Code.invalidName),
        ("app_x", ["__reserved"], .invalidName),
        ("app_x", ["a-b"], .invalidName),
        ("app_x", ["a", "a"], .invalidLabels),
    ])
    func badDefinitions(_ name: String, _ labels: [String], _ code: MetricsError.Code) {
        let registry = MetricsRegistry()
        #expect(throws: MetricsError.self) { _ = try registry.counter(name, help: "h", labels: labels) }
        do { _ = try registry.counter(name, help: "h", labels: labels) } catch { #expect(error.code == code) }
    }

    @Test func duplicatesBadBucketsAndBadCapsAreRefused() throws {
        let registry = MetricsRegistry()
        _ = try registry.counter("app_x_total", help: "h")
        #expect(throws: MetricsError.self) { _ = try registry.gauge("app_x_total", help: "h") }
        #expect(throws: MetricsError.self) { _ = try registry.histogram("app_h", help: "h", buckets: [1, 1]) }
        #expect(throws: MetricsError.self) { _ = try registry.histogram("app_h2", help: "h", buckets: []) }
        #expect(throws: MetricsError.self) { _ = try registry.histogram("app_h3", help: "h", labels: ["le"]) }
        #expect(throws: MetricsError.self) { _ = try registry.counter("app_c_total", help: "h", labels: ["a"], cap: LabelCap(label: "b", limit: 1)) }
    }
}
