import Foundation
import Logging
import NIOCore
import TestSupport
import Testing

@testable import PushRelayTLS

/// `TLSServerContext.reload()`: new handshakes get the new certificate, open connections keep theirs, a bad
/// certificate is refused and the old one stays.
@Suite("TLS certificate reload", .serialized, .tags(.peer))
struct TLSServerReloadTests {
    /// The serial number of the certificate the server presents to a new `openssl s_client` handshake.
    private func servedSerial(_ port: Int, _ certificates: TestCertificates) async throws -> String {
        let handshake = try await ChildProcess.run(
            "openssl",
            ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-CAfile", certificates.caFile,
             "-verify_return_error"],
            timeout: .seconds(30)
        )
        let serial = try await ChildProcess.run(
            "openssl", ["x509", "-noout", "-serial"], standardInput: handshake.stdout, timeout: .seconds(30))
        return serial.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func install(_ certificate: String, _ key: String, into live: TestCertificates) throws {
        for (source, name) in [(certificate, "live.pem"), (key, "live.key")] {
            let target = live.path(name)
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: source, toPath: target)
        }
    }

    /// A context serving `certificate` and `key` as `live.pem` and `live.key`, the names a reload reads again.
    private func liveContext(
        _ certificate: String, _ key: String, _ certificates: TestCertificates
    ) throws -> (TLSServerContext, RecordingLogHandler.Store) {
        try install(certificate, key, into: certificates)
        let (logger, logs) = RecordingLogHandler.makeLogger()
        let context = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.path("live.pem"), privateKeyFile: certificates.path("live.key")),
            logger: logger
        )
        return (context, logs)
    }

    /// What `openssl s_client` holding only the root says of the chain served on `port` for `localhost`.
    private func verification(_ port: Int, _ certificates: TestCertificates) async throws -> String {
        try await ChildProcess.run(
            "openssl",
            ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-CAfile",
             certificates.caFile, "-verify_hostname", "localhost", "-verify_return_error"],
            timeout: .seconds(30)
        ).combined
    }

    @Test("reload serves the new certificate to new handshakes; an open connection keeps working")
    func reloadKeepsOpenConnections() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let (context, logs) = try liveContext(certificates.serverCertificateA, certificates.serverKeyA, certificates)
        #expect(context.certificate.serialNumber == "A1")
        let server = try await TestTLSServer.start(context)
        let client = try TLSClientContext(
            configuration: TLSClientConfiguration(trustRoots: .certificateFile(certificates.caFile)), logger: Logger(label: "test.tls.client"))
        let before = try await TestTLSClientConnection.connect(client, port: server.port)
        _ = try await before.handshake()
        _ = try await before.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", thenWaitFor: "ok alpn=")
        #expect(try await servedSerial(server.port, certificates) == "serial=A1")

        try install(certificates.serverCertificateB, certificates.serverKeyB, into: certificates)
        let info = try context.reload()
        #expect(info.serialNumber == "B2")
        #expect(info.subject == "CN=localhost")
        #expect(info.issuer == "CN=PushRelay Test CA")
        #expect(try await servedSerial(server.port, certificates) == "serial=B2")
        // The connection made before the reload still works, on its old certificate.
        let response = try await before.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", thenWaitFor: "ok alpn=")
        #expect(response.hasPrefix("HTTP/1.1 200 OK"))
        #expect(logs.messages("TLS certificate reloaded").count == 1)
        await before.close()
        try await server.stop()
    }

    @Test("a bad certificate or key is refused with a clear error and the old certificate stays")
    func badReloadRefused() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let (context, logs) = try liveContext(certificates.serverCertificateA, certificates.serverKeyA, certificates)
        let server = try await TestTLSServer.start(context)

        let cases: [(certificate: String, key: String, code: TLSError.Code)] = [
            (certificates.serverCertificateB, certificates.unrelatedKey, .privateKeyMismatch),
            (certificates.serverCertificateB, certificates.serverKeyA, .privateKeyMismatch),
            (certificates.expiredCertificate, certificates.serverKeyA, .certificateExpired),
            (certificates.serverKeyA, certificates.serverKeyA, .certificateUnreadable),
            (certificates.serverCertificateB, certificates.serverCertificateB, .privateKeyUnreadable),
            (certificates.serverCertificateA, certificates.encryptedKey, .privateKeyUnreadable),
        ]
        for (certificate, key, code) in cases {
            try install(certificate, key, into: certificates)
            let error = #expect(throws: TLSError.self) { try context.reload() }
            #expect(error?.code == code, "\(String(describing: error))")
            #expect(context.certificate.serialNumber == "A1")
        }
        try FileManager.default.removeItem(atPath: certificates.path("live.pem"))
        let missing = #expect(throws: TLSError.self) { try context.reload() }
        #expect(missing?.code == .certificateUnreadable)
        #expect(missing?.message.contains("live.pem") == true)

        #expect(try await servedSerial(server.port, certificates) == "serial=A1")
        #expect(logs.messages("TLS certificate reload refused; still serving the previous certificate").count == 7)
        try await server.stop()
    }

    @Test("a full chain (leaf + intermediate) is served and verifies against the root alone")
    func fullChain() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let context = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.chainedFullChain, privateKeyFile: certificates.chainedKey),
            logger: RecordingLogHandler.makeLogger().0
        )
        #expect(context.certificate.issuer == "CN=PushRelay Test Intermediate")
        let server = try await TestTLSServer.start(context)
        let result = try await verification(server.port, certificates)
        try await server.stop()
        #expect(result.contains("Verify return code: 0 (ok)"), "\(result)")
        #expect(result.contains("1 s:CN = PushRelay Test Intermediate"), "\(result)")
    }

    @Test("a chain file cut after the leaf is refused on reload when the chain in use serves intermediates")
    func chainCutAfterLeafRefused() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let (context, logs) = try liveContext(certificates.chainedFullChain, certificates.chainedKey, certificates)
        let server = try await TestTLSServer.start(context)

        try install(certificates.chainedLeafOnly, certificates.chainedKey, into: certificates)
        let error = #expect(throws: TLSError.self) { try context.reload() }
        #expect(error?.code == .certificateUnreadable)
        #expect(error?.message.contains("CN=PushRelay Test Intermediate") == true, "\(String(describing: error))")
        #expect(error?.message.contains("cut after the leaf") == true, "\(String(describing: error))")
        #expect(logs.messages("TLS certificate reload refused; still serving the previous certificate").count == 1)
        // Still the whole chain: a client holding only the root verifies it.
        let result = try await verification(server.port, certificates)
        #expect(result.contains("Verify return code: 0 (ok)"), "\(result)")

        // The whole chain again is accepted; a deployment that never served intermediates (a leaf signed by a root
        // its clients hold, as serverCertificateA) keeps reloading leaf-only files.
        try install(certificates.chainedFullChain, certificates.chainedKey, into: certificates)
        #expect(try context.reload().serialNumber == "D4")
        try await server.stop()
    }

    @Test("an expired certificate is accepted at start with a warning, so a lapsed renewal cannot keep the daemon down")
    func expiredAtStart() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let (logger, logs) = RecordingLogHandler.makeLogger()
        let context = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.expiredCertificate, privateKeyFile: certificates.serverKeyA),
            logger: logger
        )
        #expect(context.certificate.serialNumber == "C3")
        #expect(logs.messages("TLS certificate is expired or not yet valid").count == 1)
    }

    @Test("a mismatched key at start is refused")
    func mismatchAtStart() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let error = #expect(throws: TLSError.self) {
            try TLSServerContext(
                configuration: TLSServerConfiguration(
                    certificateChainFile: certificates.serverCertificateA, privateKeyFile: certificates.serverKeyB),
                logger: Logger(label: "test")
            )
        }
        #expect(error?.code == .privateKeyMismatch)
    }
}
