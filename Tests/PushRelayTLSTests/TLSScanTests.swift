import Foundation
import TestSupport
import Testing

@testable import PushRelayTLS

/// A scan by sslyze (a TLS scanner nobody here wrote, with its own legacy OpenSSL that still speaks SSLv2/3).
@Suite("TLS scan with sslyze", .serialized, .tags(.peer))
struct TLSScanTests {
    /// Reads sslyze's JSON and prints one line per finding the test checks.
    private static let summarize = #"""
        import json, sys
        report = json.load(open(sys.argv[1]))
        results = report["server_scan_results"]
        if len(results) != 1 or results[0]["scan_status"] != "COMPLETED":
            print("scan-failed", json.dumps(results)[:2000]); sys.exit(0)
        scan = results[0]["scan_result"]
        for key in ["ssl_2_0_cipher_suites", "ssl_3_0_cipher_suites", "tls_1_0_cipher_suites",
                    "tls_1_1_cipher_suites", "tls_1_2_cipher_suites", "tls_1_3_cipher_suites"]:
            attempt = scan[key]
            if attempt["status"] != "COMPLETED":
                print(key, "not-completed", attempt.get("error_reason")); continue
            for accepted in attempt["result"]["accepted_cipher_suites"]:
                print(key, "accepted", accepted["cipher_suite"]["name"])
        compression = scan["tls_compression"]
        print("compression", compression["status"], compression["result"]["supports_compression"])
        reneg = scan["session_renegotiation"]
        print("client-renegotiation", reneg["status"],
              reneg["result"]["is_vulnerable_to_client_renegotiation_dos"],
              "secure-renegotiation", reneg["result"]["supports_secure_renegotiation"])
        """#

    @Test("no SSLv2/3, TLS 1.0/1.1, weak suites, compression or client renegotiation")
    func sslyzeScan() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let context = try TLSServerContext(
            configuration: TLSServerConfiguration(
                certificateChainFile: certificates.serverCertificateA, privateKeyFile: certificates.serverKeyA),
            logger: RecordingLogHandler.makeLogger().0
        )
        let server = try await TestTLSServer.start(context)
        let report = certificates.path("sslyze.json")
        let scan = try await ChildProcess.run(
            "python3",
            ["-m", "sslyze", "--quiet", "--json_out=\(report)", "--sslv2", "--sslv3", "--tlsv1", "--tlsv1_1",
             "--tlsv1_2", "--tlsv1_3", "--compression", "--reneg", "localhost:\(server.port){127.0.0.1}"],
            timeout: .seconds(300)
        )
        try await server.stop()
        #expect(scan.status == 0, "\(scan.combined)")
        let summary = try await ChildProcess.run("python3", ["-c", Self.summarize, report], timeout: .seconds(60))
        let lines = summary.stdout.split(separator: "\n").map(String.init)
        #expect(!lines.isEmpty && !lines.contains { $0.hasPrefix("scan-failed") || $0.contains("not-completed") },
                "\(summary.combined)")
        let accepted = lines.filter { $0.contains(" accepted ") }
        for old in ["ssl_2_0", "ssl_3_0", "tls_1_0", "tls_1_1"] {
            #expect(!accepted.contains { $0.hasPrefix(old) }, "\(accepted)")
        }
        let tls12 = accepted.filter { $0.hasPrefix("tls_1_2") }.map { String($0.split(separator: " ").last!) }
        #expect(!tls12.isEmpty)
        #expect(tls12.allSatisfy { $0.hasPrefix("TLS_ECDHE_") && ($0.contains("_GCM_") || $0.contains("CHACHA20")) },
                "\(tls12)")
        #expect(accepted.contains { $0.hasPrefix("tls_1_3") })
        #expect(lines.contains("compression COMPLETED False"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("client-renegotiation COMPLETED False") }, "\(lines)")
    }
}
