import Metrics
public import Prometheus

/// Collects swift-metrics values in a Prometheus registry and renders the text exposition for `GET /metrics`.
///
/// The daemon calls ``bootstrapMetricsSystem()`` once at start, so that every library's swift-metrics goes to this
/// registry, then builds ``RelayMetrics`` with ``factory`` and serves ``render()`` with ``contentType``.
public struct PrometheusExporter: Sendable {
    /// The registry holding every metric.
    public let registry: PrometheusCollectorRegistry

    /// The swift-metrics factory writing into ``registry``, with the relay's histogram buckets.
    public let factory: PrometheusMetricsFactory

    /// The `content-type` of ``render()``: the Prometheus text format 0.0.4.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// An exporter with a fresh registry.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[RelayMetricNames.commitDuration] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1),
        ]
        factory.durationHistogramBuckets[RelayMetricNames.sendToDeliverDuration] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
            .seconds(60), .seconds(300), .seconds(3600),
        ]
        self.factory = factory
    }

    /// Makes ``factory`` the process-wide `MetricsSystem` factory. Call once per process (swift-metrics traps on a
    /// second bootstrap); tests pass ``factory`` to ``RelayMetrics/init(factory:)`` instead.
    public func bootstrapMetricsSystem() {
        MetricsSystem.bootstrap(factory)
    }

    /// The text exposition of every metric (`# TYPE` lines and samples), for the `/metrics` response body.
    public func render() -> String {
        registry.emitToString()
    }

    /// ``render()`` as bytes, without the intermediate string.
    public func renderBytes() -> [UInt8] {
        registry.emitToBuffer()
    }
}
