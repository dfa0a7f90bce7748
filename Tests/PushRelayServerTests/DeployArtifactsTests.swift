import Foundation
@testable import PushRelayServer
import Testing

@Suite("deploy/: dashboard, scrape example")
struct DeployArtifactsTests {
    /// Metric names used in a text, with the histogram suffixes removed.
    private static func metricNames(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "pushrelay_[a-z0-9_]+")
        let range = NSRange(text.startIndex..., in: text)
        var names: Set<String> = []
        for match in regex.matches(in: text, range: range) {
            var name = String(text[Range(match.range, in: text)!])
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                let base = String(name.dropLast(suffix.count))
                if RelayMetricNames.histograms.contains(base) { name = base }
            }
            names.insert(name)
        }
        return names
    }

    @Test("every metric the Grafana dashboard queries exists, and every metric has a panel")
    func dashboardNames() throws {
        let text = try String(contentsOfFile: repositoryRoot + "/deploy/grafana-dashboard.json", encoding: .utf8)
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let panels = json?["panels"] as? [[String: Any]] ?? []
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(!expressions.isEmpty)
        let used = Self.metricNames(in: expressions.joined(separator: "\n"))
        let known = Set(RelayMetricNames.all)
        #expect(used.subtracting(known).isEmpty, "unknown in dashboard: \(used.subtracting(known))")
        #expect(known.subtracting(used).isEmpty, "no panel for: \(known.subtracting(used))")
    }

    @Test("the Prometheus example's alert expressions use existing metric names")
    func prometheusExampleNames() throws {
        let text = try String(contentsOfFile: repositoryRoot + "/deploy/prometheus.yml", encoding: .utf8)
        let used = Self.metricNames(in: text)
        #expect(!used.isEmpty)
        #expect(used.subtracting(RelayMetricNames.all).isEmpty, "\(used.subtracting(RelayMetricNames.all))")
        #expect(text.contains("metrics_path: /metrics"))
    }

    @Test("docs/operations.md documents every configuration field and every metric")
    func operationsGuideIsComplete() throws {
        let text = try String(contentsOfFile: repositoryRoot + "/docs/operations.md", encoding: .utf8)
        for field in ConfigurationField.allCases {
            #expect(text.contains("| `\(field.key)` |"), "field \(field.key) missing from the table")
        }
        for name in RelayMetricNames.all {
            #expect(text.contains("| `\(name)` |"), "metric \(name) missing from the table")
        }
    }

    @Test("deploy/pushrelay.conf mentions every configuration field")
    func exampleConfigIsComplete() throws {
        let text = try String(contentsOfFile: repositoryRoot + "/deploy/pushrelay.conf", encoding: .utf8)
        for field in ConfigurationField.allCases {
            #expect(text.contains("\(field.key) = "), "\(field.key) missing from the example config")
        }
    }
}
