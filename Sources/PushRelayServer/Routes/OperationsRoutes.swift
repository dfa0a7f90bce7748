import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import PushRelayCore
import PushRelayHTTP
import PushRelayStore
import PushRelayWire

/// Whether the node should get traffic.
final class Readiness: Sendable {
    enum State: Sendable { case starting, ready, draining }
    private let state = NIOLockedValueBox(State.starting)
    func set(_ value: State) { state.withLockedValue { $0 = value } }
    var current: State { state.withLockedValue { $0 } }
}

/// `/healthz` (the process answers), `/readyz` (store readable, listeners up, not draining), `/metrics`.
struct OperationsRoutes: Sendable {
    let store: any PushStore
    let hub: DeliveryHub
    let metrics: RelayMetrics
    let exporter: PrometheusExporter
    let readiness: Readiness

    static let healthy: HTTPServerResponse = {
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(ByteBuffer(string: #"{"status":"ok"}"#)))
    }()

    func ready(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        switch readiness.current {
        case .starting:
            return JSONResponse.ok(["status": "starting"], status: .serviceUnavailable)
        case .draining:
            return JSONResponse.ok(["status": "draining"], status: .serviceUnavailable)
        case .ready:
            do {
                _ = try await store.queueStatistics()
                return JSONResponse.ok(["status": "ready"])
            } catch {
                return JSONResponse.ok(["status": "store unavailable"], status: .serviceUnavailable)
            }
        }
    }

    func metrics(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        if let statistics = try? await store.queueStatistics() {
            metrics.setQueueDepth(statistics.storedMessages)
        }
        var fields = HTTPFields()
        fields[.contentType] = PrometheusExporter.contentType
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(ByteBuffer(bytes: exporter.renderBytes())))
    }
}
