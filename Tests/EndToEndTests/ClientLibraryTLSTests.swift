import Foundation
import Logging
import PushRelayTLS
import TestSupport
import Testing

@testable import PushRelayClient
import PushRelayClientNIO

/// The client library over TLS against the real daemon's TLS listener: ALPN h2, certificate verification.
@Suite("Client library over TLS against the real daemon", .serialized, .tags(.endToEnd), .hangGuard)
struct ClientLibraryTLSTests {
    static func client(_ daemon: Daemon, _ keys: ProjectKeys, trusting caFile: String) throws -> PushClient {
        let tls = try TLSClientContext(
            configuration: TLSClientConfiguration(trustRoots: .certificateFile(caFile)),
            logger: Logger(label: "e2e.tls")
        )
        let configuration = PushClientConfiguration(
            serverURL: URL(string: daemon.tlsURL)!,
            registration: .init(project: keys.project, app: "br.com.siecola.shop", clientKey: keys.clientKey))
        var logger = Logger(label: "e2e.client")
        logger.logLevel = .critical
        let transport = try HTTP2Transport(configuration: configuration,
                                           tlsHandlerFactory: { host in tls.makeHandler(serverHostname: host) })
        return try PushClient(configuration: configuration, transport: transport, logger: logger)
    }

    @Test("over https the client negotiates h2 by ALPN, verifies the server, and the scenario reaches the view model")
    @MainActor
    func scenarioOverTLS() async throws {
        let (daemon, pki) = try await TLSEndToEndTests.startTLSDaemon()
        let keys = try await daemon.createProject()
        let client = try Self.client(daemon, keys, trusting: pki.caFile)
        let viewModel = SalesMessageViewModel(client: client)
        let token = try #require(try await client.register().token)
        let handled = Handled()
        var id = ""
        try await withRunningClient(client, handled: handled) {
            try await waitUntil("connected") { client.state.isConnected }
            id = try await ClientLibraryTests.sendScenario(daemon, keys, to: token)
            try await waitUntil("the view model shows the message") { viewModel.messageId == id }
            let transport = try #require(client.transport as? HTTP2Transport)
            #expect(await transport.negotiatedProtocol == "h2")
            try await waitUntil("acknowledged") { await handled.ids == [id] }
        }
        #expect(viewModel.orderID == 3)
        #expect(viewModel.userEmail == "matilde@siecola.com.br")
        try await daemon.terminate()
    }

    @Test("a server whose certificate the client does not trust is refused: no registration happens")
    func untrustedServerIsRefused() async throws {
        let (daemon, _) = try await TLSEndToEndTests.startTLSDaemon()
        let keys = try await daemon.createProject()
        let stranger = try await TestPKI()  // another CA: the daemon's certificate does not chain to it
        let client = try Self.client(daemon, keys, trusting: stranger.caFile)
        let error = await #expect(throws: (any Error).self) { try await client.register() }
        // The handshake's own verdict, not some later failure.
        let clientError = try #require(error as? PushClientError, "\(String(describing: error))")
        #expect(clientError.message.contains("certificate verification failed"), "\(clientError)")
        let devices = try await daemon.query("SELECT count(*) FROM devices")
        #expect(devices == "0", "\(devices)")
        try await daemon.terminate()
    }
}
