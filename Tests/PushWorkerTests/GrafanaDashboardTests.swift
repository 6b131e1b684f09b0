import Foundation
import PushWorkerTesting
import Testing

/// `deploy/grafana/pushworker-dashboard.json`: every panel's query, asked of a real Prometheus that scrapes a
/// running service with records flowing, has an answer (a misspelt metric or label, or a query that
/// Prometheus refuses, gives none).
@Suite(.timeLimit(.minutes(3)))
struct GrafanaDashboardTests {
    static let dashboardPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/grafana/pushworker-dashboard.json")

    /// A panel target: its panel's title and its PromQL.
    struct Target: Sendable {
        var panel: String
        var expr: String
    }

    /// Every target of every panel (rows' nested panels included), with the dashboard's variables as the
    /// test's Prometheus sees them: `$job` its job `pushworker`, `$instance` "All" (`.*`), `$__rate_interval`
    /// 30 s (Grafana gives at least 4 scrape intervals; here 1 s).
    static func targets() throws -> [Target] {
        let data = try Data(contentsOf: dashboardPath)
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any], let panels = root["panels"] as? [[String: Any]] else {
            throw ProbeFailure("\(dashboardPath.path) is not a dashboard object with panels")
        }
        let all = panels + panels.flatMap { $0["panels"] as? [[String: Any]] ?? [] }
        return all.flatMap { panel -> [Target] in
            let title = panel["title"] as? String ?? "(untitled)"
            return (panel["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }.map {
                Target(panel: title, expr: $0.replacingOccurrences(of: "$__rate_interval", with: "30s")
                    .replacingOccurrences(of: "$instance", with: ".*").replacingOccurrences(of: "$job", with: "pushworker"))
            }
        }
    }

    @Test func theDashboardIsImportableWithADataSourceVariable() throws {
        let data = try Data(contentsOf: Self.dashboardPath)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let variables = (root["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        #expect(variables.contains { $0["name"] as? String == "datasource" && $0["type"] as? String == "datasource" && $0["query"] as? String == "prometheus" })
        let panels = (root["panels"] as? [[String: Any]] ?? []).filter { $0["type"] as? String != "row" }
        #expect(panels.count >= 10)
        for panel in panels {
            let uid = (panel["datasource"] as? [String: Any])?["uid"] as? String
            #expect(uid == "${datasource}", "panel \(panel["title"] ?? "?") names its data source through the variable")
            #expect(!(panel["description"] as? String ?? "").isEmpty, "panel \(panel["title"] ?? "?") says what it shows")
        }
        #expect(try Self.targets().count >= 15)
    }

    /// Skipped under a sanitizer (PUSHWORKER_SANITIZER): it checks the dashboard's queries, which an
    /// instrumented service answers no differently, and costs a Prometheus and a service for ~10 s.
    @Test(.enabled(if: ExternalTool.runs("prometheus"), "prometheus is not installed (apt-get install prometheus); set PUSHWORKER_REQUIRE_TOOLS=1 to fail instead"),
          .disabled(if: ProcessInfo.processInfo.environment["PUSHWORKER_SANITIZER"] != nil, "the dashboard's queries are checked by the uninstrumented run"))
    func everyPanelQueryAnswersFromARealScrape() async throws {
        let targets = try Self.targets()
        let (harness, address) = try await PrometheusToolTests.runningService(deadLetters: true)
        // Records keep flowing while Prometheus scrapes: rates and quantiles have something to show.
        let flow = Task {
            var index = 0
            while !Task.isCancelled {
                _ = try? await harness.produce(#"{"aps":{"content-available":1},"type":"\#(index % 3 == 0 ? "maybe" : "ping")"}"#)
                index += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        do {
            try await PrometheusToolTests.withPrometheus(scraping: address) { process, port, log in
                let api = "http://127.0.0.1:\(port)/api/v1"
                var empty: [String] = []
                // Until every query has an answer (explicit limit: 90 s; lag and broker series come with
                // librdkafka's statistics, rates once two scrapes exist).
                _ = await HTTPProbe.eventually(timeout: .seconds(90)) {
                    guard process.isRunning else { return true }
                    empty = []
                    for target in targets {
                        let query = target.expr.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                        let reply = try? await HTTPProbe.request(api + "/query?query=" + query, timeout: .seconds(2))
                        if reply.map({ Self.resultCount($0.body) }) ?? 0 == 0 {
                            empty.append("\(target.panel): \(target.expr) -> \(reply?.body.prefix(300) ?? "no answer")")
                        }
                    }
                    return empty.isEmpty
                }
                #expect(process.isRunning, "prometheus exited: \(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(2000))")
                #expect(empty.isEmpty, "queries without a result:\n\(empty.joined(separator: "\n"))")
            }
        } catch {
            flow.cancel()
            try? await harness.shutdown()
            throw error
        }
        flow.cancel()
        _ = await flow.value
        try await harness.shutdown()
    }

    /// The number of series in a successful instant-query answer (0 for an error or no result).
    static func resultCount(_ body: String) -> Int {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              object["status"] as? String == "success",
              let data = object["data"] as? [String: Any], let result = data["result"] as? [Any] else { return 0 }
        return result.count
    }
}
