import Foundation
import Logging
import NIOCore
import TestSupport
import Testing

@testable import PushRelayTLS

/// The client handler against `openssl s_server` and against our own server.
@Suite("TLS client", .serialized, .tags(.peer))
struct TLSClientTests {
    private let logger = RecordingLogHandler.makeLogger().0

    @Test("against openssl s_server: verified chain, ALPN h2, TLS 1.3, data both ways")
    func againstOpenSSLServer() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try BackgroundProcess(
            "openssl",
            ["s_server", "-accept", "127.0.0.1:0", "-cert", certificates.serverCertificateA,
             "-key", certificates.serverKeyA, "-alpn", "h2", "-www", "-naccept", "1"]
        )
        defer { server.stop() }
        let port = try await server.acceptedPort()
        let context = try TLSClientContext(
            configuration: TLSClientConfiguration(trustRoots: .certificateFile(certificates.caFile)),
            logger: logger
        )
        let connection = try await TestTLSClientConnection.connect(context, port: port)
        let handshake = try await connection.handshake()
        #expect(handshake.applicationProtocol == "h2")
        #expect(handshake.protocolVersion == "TLSv1.3")
        // s_server -www answers any GET with an HTML status page.
        let page = try await connection.send("GET / HTTP/1.0\r\n\r\n", thenWaitFor: "</HTML>")
        #expect(page.contains("HTTP/1.0 200 ok"))
        await connection.close()
    }

    @Test("against openssl s_server without ALPN: handshake completes with no protocol")
    func againstOpenSSLServerWithoutALPN() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let server = try BackgroundProcess(
            "openssl",
            ["s_server", "-accept", "127.0.0.1:0", "-cert", certificates.serverCertificateA,
             "-key", certificates.serverKeyA, "-www", "-naccept", "1", "-tls1_2"]
        )
        defer { server.stop() }
        let port = try await server.acceptedPort()
        let context = try TLSClientContext(
            configuration: TLSClientConfiguration(trustRoots: .certificateFile(certificates.caFile)),
            logger: logger
        )
        let connection = try await TestTLSClientConnection.connect(context, port: port)
        let handshake = try await connection.handshake()
        #expect(handshake.applicationProtocol == nil)
        #expect(handshake.protocolVersion == "TLSv1.2")
        await connection.close()
    }

    /// Our client against our server.
    private func withOwnServer(_ body: (TestCertificates, TestTLSServer) async throws -> Void) async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let context = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.serverCertificateA, privateKeyFile: certificates.serverKeyA),
            logger: logger
        )
        let server = try await TestTLSServer.start(context)
        do {
            try await body(certificates, server)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    @Test("against our server: verification succeeds with the CA, by name and by IP address")
    func againstOwnServer() async throws {
        try await withOwnServer { certificates, server in
            let context = try TLSClientContext(
                configuration: TLSClientConfiguration(
                    trustRoots: .certificateFile(certificates.caFile), applicationProtocols: ["http/1.1"]),
                logger: logger
            )
            for name in ["localhost", "127.0.0.1"] {
                let connection = try await TestTLSClientConnection.connect(context, port: server.port, serverHostname: name)
                let handshake = try await connection.handshake()
                #expect(handshake.applicationProtocol == "http/1.1")
                let response = try await connection.send(
                    "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", thenWaitFor: "ok alpn=http/1.1\n")
                #expect(response.hasPrefix("HTTP/1.1 200 OK"))
                // Keep-alive: a second request on the same connection.
                _ = try await connection.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", thenWaitFor: "ok alpn=")
                await connection.close()
            }
        }
    }

    @Test("against our server: a wrong host name fails verification")
    func wrongHostName() async throws {
        try await withOwnServer { certificates, server in
            let context = try TLSClientContext(
                configuration: TLSClientConfiguration(trustRoots: .certificateFile(certificates.caFile)),
                logger: logger
            )
            for name in ["relay.example.com", "127.0.0.2"] {
                let connection = try await TestTLSClientConnection.connect(context, port: server.port, serverHostname: name)
                let error = await #expect(throws: TLSError.self) { try await connection.handshake() }
                #expect(error?.code == .certificateVerificationFailed, "\(String(describing: error))")
                #expect(error?.message.contains("mismatch") == true, "\(String(describing: error))")
                try await connection.channel.closeFuture.get()
            }
        }
    }

    @Test("against our server: an untrusted CA fails verification; so do the system roots")
    func untrustedCA() async throws {
        try await withOwnServer { certificates, server in
            for roots in [TLSClientConfiguration.TrustRoots.certificateFile(certificates.otherCAFile), .system] {
                let context = try TLSClientContext(configuration: TLSClientConfiguration(trustRoots: roots), logger: logger)
                let connection = try await TestTLSClientConnection.connect(context, port: server.port)
                let error = await #expect(throws: TLSError.self) { try await connection.handshake() }
                #expect(error?.code == .certificateVerificationFailed, "\(String(describing: error))")
                try await connection.channel.closeFuture.get()
            }
        }
    }

    @Test("an unreadable CA file is refused when the context is made")
    func unreadableCAFile() {
        #expect(throws: TLSError.self) {
            try TLSClientContext(
                configuration: TLSClientConfiguration(trustRoots: .certificateFile("/nonexistent/ca.pem")),
                logger: logger
            )
        }
    }
}
