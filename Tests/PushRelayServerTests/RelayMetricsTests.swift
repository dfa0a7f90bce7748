@testable import PushRelayServer
import Testing

@Suite("Relay metrics in the Prometheus text format")
struct RelayMetricsTests {
    /// A fresh registry per test; nothing global is bootstrapped.
    private func make() -> (RelayMetrics, PrometheusExporter) {
        let exporter = PrometheusExporter()
        return (RelayMetrics(factory: exporter.factory), exporter)
    }

    private func lines(_ exporter: PrometheusExporter) -> Set<String> {
        Set(exporter.render().split(separator: "\n").map(String.init))
    }

    @Test("counters, labelled counters and gauges render as samples with TYPE lines")
    func countersAndGauges() {
        let (metrics, exporter) = make()
        metrics.sendsAccepted(count: 3)
        metrics.sendsRejected(error: "InvalidRegistration", count: 2)
        metrics.sendsRejected(error: "NotRegistered")
        metrics.messagesDelivered(count: 5)
        metrics.messagesAcked(count: 4)
        metrics.messagesExpired()
        metrics.messagesDropped(reason: .collapsed, count: 2)
        metrics.setQueueDepth(42)
        metrics.setWALPages(1200)
        metrics.streamOpened()
        metrics.streamOpened()
        metrics.streamClosed()
        metrics.deviceConnected()
        metrics.connectionOpened()
        metrics.tlsHandshakeCompleted(alpn: "h2")
        metrics.tlsHandshakeCompleted(alpn: nil)
        metrics.tlsHandshakeFailed(reason: "protocol")

        let text = lines(exporter)
        for expected in [
            "# TYPE pushrelay_sends_accepted_total counter",
            "pushrelay_sends_accepted_total 3",
            "# TYPE pushrelay_sends_rejected_total counter",
            #"pushrelay_sends_rejected_total{error="InvalidRegistration"} 2"#,
            #"pushrelay_sends_rejected_total{error="NotRegistered"} 1"#,
            "pushrelay_messages_delivered_total 5",
            "pushrelay_messages_acked_total 4",
            "pushrelay_messages_expired_total 1",
            #"pushrelay_messages_dropped_total{reason="collapsed"} 2"#,
            #"pushrelay_messages_dropped_total{reason="overflow"} 0"#,
            "# TYPE pushrelay_queue_depth gauge",
            "pushrelay_queue_depth 42.0",
            "# TYPE pushrelay_store_wal_pages gauge",
            "pushrelay_store_wal_pages 1200.0",
            "pushrelay_open_streams 1.0",
            "pushrelay_connected_devices 1.0",
            "pushrelay_open_connections 1.0",
            #"pushrelay_tls_handshakes_total{alpn="h2"} 1"#,
            #"pushrelay_tls_handshakes_total{alpn="none"} 1"#,
            #"pushrelay_tls_handshake_failures_total{reason="protocol"} 1"#,
        ] {
            #expect(text.contains(expected), "missing line: \(expected)\n\(exporter.render())")
        }
    }

    @Test("latency histograms have the relay's buckets, a sum and a count, in seconds")
    func histograms() {
        let (metrics, exporter) = make()
        metrics.recordCommit(duration: .microseconds(800))
        metrics.recordCommit(duration: .milliseconds(30))
        metrics.recordSendToDeliver(duration: .milliseconds(3))
        let text = lines(exporter)
        for expected in [
            "# TYPE pushrelay_store_commit_duration_seconds histogram",
            #"pushrelay_store_commit_duration_seconds_bucket{le="0.0005"} 0"#,
            #"pushrelay_store_commit_duration_seconds_bucket{le="0.001"} 1"#,
            #"pushrelay_store_commit_duration_seconds_bucket{le="0.05"} 2"#,
            #"pushrelay_store_commit_duration_seconds_bucket{le="+Inf"} 2"#,
            "pushrelay_store_commit_duration_seconds_count 2",
            "# TYPE pushrelay_send_to_deliver_duration_seconds histogram",
            #"pushrelay_send_to_deliver_duration_seconds_bucket{le="0.001"} 0"#,
            #"pushrelay_send_to_deliver_duration_seconds_bucket{le="0.005"} 1"#,
            #"pushrelay_send_to_deliver_duration_seconds_bucket{le="3600.0"} 1"#,
            "pushrelay_send_to_deliver_duration_seconds_count 1",
        ] {
            #expect(text.contains(expected), "missing line: \(expected)\n\(exporter.render())")
        }
        let sum = text.first { $0.hasPrefix("pushrelay_store_commit_duration_seconds_sum ") }
        #expect(sum.flatMap { Double($0.split(separator: " ")[1]) }.map { abs($0 - 0.0308) < 1e-9 } == true)
    }

    @Test("label values past 64 distinct ones fold into 'other'")
    func boundedLabels() {
        let (metrics, exporter) = make()
        for index in 0..<70 {
            metrics.sendsRejected(error: "Error\(index)")
        }
        let rejected = lines(exporter).filter { $0.hasPrefix("pushrelay_sends_rejected_total{") }
        #expect(rejected.count == 65)
        #expect(rejected.contains(#"pushrelay_sends_rejected_total{error="other"} 6"#))
    }

    @Test("every declared metric name appears once something was recorded; the content type is 0.0.4")
    func everyNameExported() {
        let (metrics, exporter) = make()
        metrics.sendsAccepted()
        metrics.sendsRejected(error: "Unavailable")
        metrics.messagesDelivered()
        metrics.messagesAcked()
        metrics.messagesExpired()
        metrics.setQueueDepth(0)
        metrics.deviceConnected()
        metrics.streamOpened()
        metrics.connectionOpened()
        metrics.recordCommit(duration: .milliseconds(1))
        metrics.recordSendToDeliver(duration: .milliseconds(1))
        metrics.tlsHandshakeCompleted(alpn: "h2")
        metrics.tlsHandshakeFailed(reason: "eof")
        let text = exporter.render()
        for name in RelayMetricNames.all {
            #expect(text.contains("# TYPE \(name) "), "\(name) not exported")
        }
        #expect(PrometheusExporter.contentType.hasPrefix("text/plain; version=0.0.4"))
    }
}
