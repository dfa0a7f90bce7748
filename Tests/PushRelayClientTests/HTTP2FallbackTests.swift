import Foundation
import PushRelayClient
import PushRelayHTTP
import Testing

@testable import PushRelayClientNIO

/// When the default transport gives HTTP/2 up for HTTP/1.1: only for a cleartext server never heard over HTTP/2. A
/// server that sent its SETTINGS, or that ALPN chose `h2` for, and then let a first request stall is not an
/// HTTP/1.1 server: before, one slow first answer switched the transport to HTTP/1.1 for good, and over TLS it
/// then spoke HTTP/1.1 on connections whose ALPN had chosen `h2`.
@Suite("HTTP/2 transport: when it falls back to HTTP/1.1")
struct HTTP2FallbackTests {
    @Test("a server known to speak HTTP/2 is never given up: a closed connection is retried, a stall fails")
    func knownHTTP2ServersStay() {
        #expect(HTTP2Transport.failureAction(error: .timeout("stalled"), spokeHTTP2: true, unconfirmedFailures: 0) == .fail)
        #expect(HTTP2Transport.failureAction(error: .connectionClosed(), spokeHTTP2: true, unconfirmedFailures: 5) == .retry)
        #expect(HTTP2Transport.failureAction(error: .protocolError("x"), spokeHTTP2: true, unconfirmedFailures: 5) == .fail)
    }

    @Test("a cleartext server never heard over HTTP/2: a timeout, or a second failure, means HTTP/1.1")
    func silentCleartextServersFallBack() {
        #expect(HTTP2Transport.failureAction(error: .timeout("no answer"), spokeHTTP2: false, unconfirmedFailures: 1) == .fallBack)
        #expect(HTTP2Transport.failureAction(error: .connectionClosed(), spokeHTTP2: false, unconfirmedFailures: 1) == .retry)
        #expect(HTTP2Transport.failureAction(error: .connectionClosed(), spokeHTTP2: false, unconfirmedFailures: 2) == .fallBack)
    }

    /// A new connection has the connect timeout to show it speaks HTTP/2; once the server's SETTINGS came, its first
    /// answer has the request timeout. Before, a relay slow to answer the first request on a new connection (busy
    /// catching up after a stall) failed it after the connect timeout.
    @Test("a new connection whose server sent its SETTINGS has the request timeout for its first answer")
    func slowFirstAnswerOfAnHTTP2Server() async throws {
        let relay = try await FakeStreamAnswerRelay.start(
            [.eventStream(eventID: "1")],
            registration: [.delayed(.milliseconds(2500), .credentials(token: "token-1", secret: "secret-1"))])
        var configuration = PushClientConfiguration(
            serverURL: relay.serverURL,
            registration: .init(project: "shop", app: "br.com.siecola.shop", platform: "linux", clientKey: "k"))
        configuration.connectTimeout = .seconds(1)
        let transport = try HTTP2Transport(configuration: configuration)
        let client = try PushClient(configuration: configuration, transport: transport)
        let credentials = try await client.register()
        #expect(credentials.token == "token-1")
        #expect(relay.registerRequests == 1)
        #expect(await transport.negotiatedProtocol == "h2")
        #expect(await transport.connectionsOpened == 1)
        await transport.shutdown()
        await relay.shutdown()
    }
}
