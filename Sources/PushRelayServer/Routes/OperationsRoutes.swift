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

/// `/healthz` (the process answers), `/readyz` (store readable and committing, listeners up, not draining),
/// `/metrics`.
///
/// Both `/readyz` and `/metrics` are O(1) and never touch the store: they read ``StoreStatisticsSnapshot``, which
/// the relay refreshes once per ``RelayApplication/Options/statisticsInterval``, and the store's in-memory
/// ``PushStore/commitFailure``.
struct OperationsRoutes: Sendable {
    let exporter: PrometheusExporter
    let readiness: Readiness
    let snapshot: StoreStatisticsSnapshot
    let store: any PushStore

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
            if let failure = snapshot.readFailure {
                return JSONResponse.ok(
                    ["status": "store unavailable", "reason": .string(failure)], status: .serviceUnavailable)
            }
            if let failure = store.commitFailure {
                // The reason is the engine's (e.g. "database or disk is full"): never a key, secret or URL password.
                return JSONResponse.ok(
                    ["status": "store cannot commit", "reason": .string(failure.message)], status: .serviceUnavailable)
            }
            return JSONResponse.ok(["status": "ready"])
        }
    }

    func metrics(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        var fields = HTTPFields()
        fields[.contentType] = PrometheusExporter.contentType
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(ByteBuffer(bytes: exporter.renderBytes())))
    }
}
