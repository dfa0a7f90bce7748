import Foundation
import TestSupport

/// A throw-away PKI made with the `openssl` command in a temp directory: a CA, two server certificates for
/// `localhost`/127.0.0.1 told apart by serial number (A1, B2), a key that matches neither, an expired
/// certificate, and a second CA that signed nothing we serve.
struct TestCertificates: Sendable {
    let directory: URL

    var caFile: String { path("ca.pem") }
    var otherCAFile: String { path("other-ca.pem") }
    /// Serial A1, its key `serverKeyA`.
    var serverCertificateA: String { path("server-a.pem") }
    var serverKeyA: String { path("server-a.key") }
    /// Serial B2, its key `serverKeyB`.
    var serverCertificateB: String { path("server-b.pem") }
    var serverKeyB: String { path("server-b.key") }
    /// Serial C3, expired yesterday; key `serverKeyA`.
    var expiredCertificate: String { path("expired.pem") }
    var unrelatedKey: String { path("unrelated.key") }
    /// `serverKeyA` encrypted with a passphrase.
    var encryptedKey: String { path("encrypted.key") }
    /// Serial D4, signed by an intermediate CA: the leaf then the intermediate, as Let's Encrypt's fullchain.pem.
    var chainedFullChain: String { path("chained-fullchain.pem") }
    var chainedKey: String { path("chained.key") }
    /// The same leaf D4 alone, without its intermediate: a fullchain.pem cut after the leaf.
    var chainedLeafOnly: String { path("chained.pem") }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func make() async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushrelay-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: certificates.path("san.ext"), atomically: true, encoding: .utf8)
        try await certificates.run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=PushRelay Test CA"])
        try await certificates.run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=Other Test CA"])
        for (name, serial, days, key) in [
            ("server-a", "0xA1", "2", "server-a"), ("server-b", "0xB2", "2", "server-b"),
            ("expired", "0xC3", "-1", "server-a"),
        ] {
            if name == key {
                try await certificates.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", "\(key).key"])
            }
            try await certificates.run(["req", "-new", "-key", "\(key).key", "-out", "\(name).csr",
                "-subj", "/CN=localhost"])
            try await certificates.run(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-set_serial", serial, "-days", days, "-extfile", "san.ext", "-out", "\(name).pem"])
        }
        try await certificates.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", "unrelated.key"])
        try await certificates.run(["pkey", "-in", "server-a.key", "-aes256", "-passout", "pass:not-a-secret",
            "-out", "encrypted.key"])
        try await certificates.makeChain()
        return certificates
    }

    private func makeChain() async throws {
        try "basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n".write(
            toFile: path("ca.ext"), atomically: true, encoding: .utf8)
        try await run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "intermediate.key", "-out", "intermediate.csr", "-subj", "/CN=PushRelay Test Intermediate"])
        try await run(["x509", "-req", "-in", "intermediate.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-set_serial", "0x1D", "-days", "2", "-extfile", "ca.ext", "-out", "intermediate.pem"])
        try await run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "chained.key", "-out", "chained.csr", "-subj", "/CN=localhost"])
        try await run(["x509", "-req", "-in", "chained.csr", "-CA", "intermediate.pem", "-CAkey", "intermediate.key",
            "-set_serial", "0xD4", "-days", "2", "-extfile", "san.ext", "-out", "chained.pem"])
        let chain = try String(contentsOfFile: path("chained.pem"), encoding: .utf8)
            + String(contentsOfFile: path("intermediate.pem"), encoding: .utf8)
        try chain.write(toFile: chainedFullChain, atomically: true, encoding: .utf8)
    }

    private func run(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("openssl", arguments, workingDirectory: directory.path)
        guard result.status == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
