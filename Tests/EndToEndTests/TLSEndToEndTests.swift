import Foundation
import TestSupport
import Testing

/// The daemon's TLS listener (`--listen-tls`, `--tls-cert`, `--tls-key`) against independent peers over loopback:
/// curl (HTTP/2 and HTTP/1.1), `openssl s_client`, nghttp, h2load, Python httpx, the seed scenario over https, a
/// plaintext client on the TLS port, and a certificate reload on SIGHUP.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct TLSEndToEndTests {
    // MARK: Peers

    @Test func curlOverHTTP2AndHTTP1WithCleartextListenerAlongside() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let h2 = try await pki.curl(["-o", "/dev/null", "-w", "%{http_version} %{http_code}", "--http2",
                               "\(daemon.tlsURL)/healthz"])
        #expect(h2.status == 0, "\(h2.stderr)")
        #expect(h2.stdout == "2 200")
        let h1 = try await pki.curl(["-o", "/dev/null", "-w", "%{http_version} %{http_code}", "--http1.1",
                               "\(daemon.tlsURL)/healthz"])
        #expect(h1.status == 0, "\(h1.stderr)")
        #expect(h1.stdout == "1.1 200")
        // The cleartext listener serves next to the TLS one.
        let clear = try await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/healthz"])
        #expect(clear.stdout == "200")
        // Without our CA curl refuses the certificate: verification is really on.
        let untrusted = try await run("curl", ["-sS", "-o", "/dev/null", "\(daemon.tlsURL)/healthz"])
        #expect(untrusted.status == 60, "\(untrusted.stderr)")
        #expect(daemon.log.contains("pushrelay listening on https://127.0.0.1:\(daemon.tlsPort)"))
    }

    @Test func opensslClientGetsALPNh2() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let result = try await run("openssl", [
            "s_client", "-connect", "127.0.0.1:\(daemon.tlsPort)", "-servername", "localhost", "-alpn", "h2",
            "-CAfile", pki.caFile, "-verify_return_error",
        ], stdin: "")
        #expect(result.stdout.contains("ALPN protocol: h2"), "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("Verify return code: 0 (ok)"))
        let h1 = try await run("openssl", [
            "s_client", "-connect", "127.0.0.1:\(daemon.tlsPort)", "-servername", "localhost", "-alpn", "http/1.1",
            "-CAfile", pki.caFile,
        ], stdin: "")
        #expect(h1.stdout.contains("ALPN protocol: http/1.1"), "\(h1.stdout)\(h1.stderr)")
    }

    @Test func nghttpOverTLS() async throws {
        let (daemon, _) = try await Self.startTLSDaemon()
        let result = try await run("timeout", ["30", "nghttp", "-v", "\(daemon.tlsURL)/healthz"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("The negotiated protocol: h2"), "\(result.stdout)")
        #expect(result.stdout.contains(":status: 200"))
    }

    @Test func h2loadOverTLS() async throws {
        let (daemon, _) = try await Self.startTLSDaemon()
        let result = try await run("timeout", ["120", "h2load", "-n", "2000", "-c", "4", "-m", "8", "\(daemon.tlsURL)/healthz"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("2000 succeeded, 0 failed"), "\(result.stdout)")
        #expect(result.stdout.contains("Application protocol: h2"))
    }

    @Test func pythonHTTPXWithHTTP2AndVerification() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let script = """
            import ssl, sys, httpx
            context = ssl.create_default_context(cafile=sys.argv[2])
            with httpx.Client(http2=True, verify=context) as client:
                r = client.get(sys.argv[1] + "/healthz")
                print(r.http_version, r.status_code)
            try:
                with httpx.Client(http2=True, verify=ssl.create_default_context()) as client:
                    client.get(sys.argv[1] + "/healthz")
                print("untrusted accepted")
            except httpx.ConnectError as error:
                print("untrusted refused", "CERTIFICATE_VERIFY_FAILED" in str(error))
            """
        let result = try await run("python3", ["-c", script, daemon.tlsURL, pki.caFile])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "HTTP/2 200\nuntrusted refused True\n")
    }

    // MARK: The relay over TLS

    @Test func seedScenarioOverHTTPS() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let keys = try await daemon.createProject()
        let device = try await pki.registerDevice(daemon, keys)
        #expect(device.token.contains(":APA91b"))
        let stream = try pki.openStream(daemon, secret: device.secret)
        defer { stream.stop() }
        try await stream.waitFor("the stream's first bytes") { !$0.isEmpty }

        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let answer = try await pki.send(daemon, body, serverKey: keys.serverKey)
        #expect(answer.status == 200)
        let id = try messageID(ofSendResponse: answer.body)
        let text = try await stream.waitFor("the event over https") { parseEvents($0).contains { $0.id == id } }
        let event = try #require(parseEvents(text).first { $0.id == id })
        try expectScenarioEnvelope(event.data, messageID: id, senderID: keys.senderID)
    }

    @Test func plaintextOnTheTLSPortFailsCleanlyAndTheListenerServesOn() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let plain = try await run("curl", ["-sS", "-m", "15", "-o", "/dev/null", "http://127.0.0.1:\(daemon.tlsPort)/healthz"])
        #expect(plain.status != 0)
        #expect(plain.status != 28, "the TLS port must answer a plaintext request, not stall: \(plain.stderr)")
        // Garbage and a truncated handshake (a ClientHello header, then close) do not harm the listener either.
        let garbage = """
            import socket, sys
            for payload in (b"\\x00garbage\\r\\n\\r\\n" * 64, bytes.fromhex("160301020001")):
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
                try:
                    # The daemon may refuse and close before all of it is sent: a reset or ENOTCONN here is that.
                    s.sendall(payload)
                    s.shutdown(socket.SHUT_WR)
                    while s.recv(4096):
                        pass
                except OSError:
                    pass
                s.close()
            print("done")
            """
        let sent = try await run("python3", ["-c", garbage, "\(daemon.tlsPort)"])
        #expect(sent.stdout == "done\n", "\(sent.stderr)")
        let after = try await pki.curl(["-o", "/dev/null", "-w", "%{http_code}", "\(daemon.tlsURL)/healthz"])
        #expect(after.stdout == "200", "\(after.stderr)")
        #expect(daemon.process?.isRunning == true)
        #expect(daemon.log.contains("TLS handshake failed"))
        // A client that does not trust our CA refuses the certificate (alert unknown_ca).
        let untrusting = try await run("curl", ["-sS", "-m", "15", "-o", "/dev/null", "\(daemon.tlsURL)/healthz"])
        #expect(untrusting.status == 60, "\(untrusting.stderr)")
        try await Task.sleep(for: .milliseconds(200))
        // Each failure is counted with its reason: the plaintext request and the garbage as `protocol`, the
        // truncated ClientHello as `eof`, the refused certificate as `certificate`; the good handshake by its ALPN.
        let metrics = try await run("curl", ["-sS", "\(daemon.baseURL)/metrics"]).stdout
        let failures = { (reason: String) -> Double in
            let prefix = #"pushrelay_tls_handshake_failures_total{reason="\#(reason)"} "#
            return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }
                .flatMap { Double($0.dropFirst(prefix.count)) } ?? 0
        }
        #expect(failures("protocol") >= 2, "\(metrics)")
        #expect(failures("eof") >= 1, "\(metrics)")
        #expect(failures("certificate") >= 1, "\(metrics)")
        #expect(failures("closed") == 0)
        #expect(metrics.contains(#"pushrelay_tls_handshakes_total{alpn="h2"} "#), "\(metrics)")
    }

    @Test func sighupReloadsTheCertificateAndKeepsOpenStreams() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1001")
        let keys = try await daemon.createProject()
        let device = try await pki.registerDevice(daemon, keys)
        let stream = try pki.openStream(daemon, secret: device.secret)
        defer { stream.stop() }
        try await stream.waitFor("the stream's first bytes") { !$0.isEmpty }

        try await pki.issueServerCertificate(serial: "1002")
        try daemon.hangUp()
        try await daemon.waitForLog("TLS certificate reloaded")
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1002")

        // The stream opened under the old certificate still delivers.
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let id = try await messageID(ofSendResponse: pki.send(daemon, body, serverKey: keys.serverKey).body)
        let text = try await stream.waitFor("the event on the old connection") { parseEvents($0).contains { $0.id == id } }
        try expectScenarioEnvelope(try #require(parseEvents(text).first { $0.id == id }).data,
                                   messageID: id, senderID: keys.senderID)
        #expect(stream.process.isRunning)

        // A bad certificate is refused; the one in use stays.
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: pki.certificateFile))
        try daemon.hangUp()
        try await daemon.waitForLog("TLS certificate reload refused")
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1002")
        #expect(daemon.process?.isRunning == true)
    }

    /// The configuration file names other certificate files: a SIGHUP serves those (it re-read the first paths
    /// for ever). A reload whose certificate is refused applies nothing, not even the file's new log level.
    @Test func sighupFollowsTheFilesTheConfigurationNames() async throws {
        let pki = try await TestPKI()
        let firstCertificate = pki.directory + "/first.pem", firstKey = pki.directory + "/first.key"
        try FileManager.default.copyItem(atPath: pki.certificateFile, toPath: firstCertificate)
        try FileManager.default.copyItem(atPath: pki.keyFile, toPath: firstKey)
        let file = pki.directory + "/pushrelay.conf"
        func configure(certificate: String, key: String, logLevel: String) throws {
            try Data("tls_certificate = \"\(certificate)\"\ntls_key = \"\(key)\"\nlog_level = \"\(logLevel)\"\n".utf8)
                .write(to: URL(fileURLWithPath: file))
        }
        try configure(certificate: firstCertificate, key: firstKey, logLevel: "info")
        let daemon = try Daemon(arguments: ["--config", file, "--listen-tls", "127.0.0.1:0"])
        try await daemon.start()
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1001")

        // New files at the paths the daemon started with stay as they are; the file now names others.
        try await pki.issueServerCertificate(serial: "1002")
        try configure(certificate: pki.certificateFile, key: pki.keyFile, logLevel: "info")
        try daemon.hangUp()
        try await daemon.waitForLog("TLS certificate reloaded")
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1002")

        // A key that does not match, and debug logging, in one edit: refused whole.
        try configure(certificate: pki.certificateFile, key: firstKey, logLevel: "debug")
        try daemon.hangUp()
        try await daemon.waitForLog("reload failed")
        #expect(try await pki.servedSerial(port: daemon.tlsPort) == "1002")
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let stream = try await daemon.openConnectedStream(secret: device.secret)
        stream.stop()
        #expect(!daemon.log.contains("stream opened"), "debug logging came with a refused reload:\n\(daemon.log)")
        #expect(try await daemon.terminate() == 0)
    }

    /// TLS 1.3: a client that sends its request and its close_notify together ends only its side (RFC 8446 §6.1): the
    /// send is answered (it used to be closed unanswered, sometimes stored all the same), then our close_notify.
    @Test func closeNotifyAfterARequestIsAnswered() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let keys = try await daemon.createProject()
        let device = try await pki.registerDevice(daemon, keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let script = """
            import socket, ssl, sys
            port, key, body = int(sys.argv[1]), sys.argv[2], sys.stdin.read().encode()
            request = (b"POST /fcm/send HTTP/1.1\\r\\nHost: localhost\\r\\nAuthorization: key=" + key.encode()
                + b"\\r\\nContent-Type: application/json\\r\\nContent-Length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
            context = ssl.create_default_context(cafile=sys.argv[3])
            context.minimum_version = ssl.TLSVersion.TLSv1_3
            context.set_alpn_protocols(["http/1.1"])
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
            sock = socket.create_connection(("127.0.0.1", port))
            sock.settimeout(10)
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    sock.sendall(outgoing.read())
                    incoming.write(sock.recv(65536))
            sock.sendall(outgoing.read())
            tls.write(request)
            try:
                tls.unwrap()  # our close_notify, in the same segment as the request
            except ssl.SSLWantReadError:
                pass
            sock.sendall(outgoing.read())
            answer = b""
            try:
                while True:
                    data = sock.recv(65536)
                    if not data:
                        break
                    incoming.write(data)
                    try:
                        while True:
                            answer += tls.read(65536)
                    except ssl.SSLWantReadError:
                        pass
            except (ssl.SSLZeroReturnError, ssl.SSLError, OSError) as error:
                answer += b"<" + type(error).__name__.encode() + b">"
            sys.stdout.write(answer.decode("latin-1"))
            """
        let result = try await run("python3", ["-c", script, String(daemon.tlsPort), keys.serverKey, pki.caFile], stdin: body)
        #expect(result.stdout.hasPrefix("HTTP/1.1 200"), "\(result.stdout) \(result.stderr)")
        let id = try messageID(ofSendResponse: String(result.stdout.split(separator: "\r\n\r\n", maxSplits: 1).last ?? "")
            .replacingOccurrences(of: "<SSLZeroReturnError>", with: ""))
        #expect(!id.isEmpty)
        #expect(result.stdout.hasSuffix("<SSLZeroReturnError>"), "then our close_notify: \(result.stdout)")
        try await daemon.terminate()
    }

    @Test func missingOrBadCertificateExits78() async throws {
        let pki = try await TestPKI()
        let garbage = pki.directory + "/garbage.pem"
        try Data("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n".utf8)
            .write(to: URL(fileURLWithPath: garbage))
        let otherKey = pki.directory + "/other.key"
        _ = try await pki.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", otherKey])
        let dataDir = pki.directory + "/data"
        let cases: [(cert: String, key: String, mentions: String)] = [
            (pki.directory + "/absent.pem", pki.keyFile, "absent.pem"),
            (garbage, pki.keyFile, "TLS"),
            (pki.certificateFile, otherKey, "TLS"),
        ]
        for item in cases {
            let result = try await run("timeout", [
                "30", Daemon.binary, "serve", "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
                "--tls-cert", item.cert, "--tls-key", item.key, "--data-dir", dataDir,
            ])
            #expect(result.status == 78, "\(item.cert) \(item.key): \(result.stderr)")
            #expect(result.stderr.contains(item.mentions), "\(result.stderr)")
        }
    }

    /// `pushrelay listen` on an `https://` server: OpenSSL with ALPN, trusting only `--ca-file` (without it, the
    /// test CA is unknown and the certificate refused). Both ends use HTTP/2 and the stream sees the scenario.
    @Test func listenOverHTTPS() async throws {
        let (daemon, pki) = try await Self.startTLSDaemon()
        let keys = try await daemon.createProject()
        let device = try await pki.registerDevice(daemon, keys)
        let listener = try StreamingProcess(Daemon.binary, [
            "listen", "--server", daemon.tlsURL, "--ca-file", pki.caFile, "--secret", device.secret,
            "--count", "1", "--timeout", "60",
        ])
        defer { listener.stop() }
        let id = try await ClientLibraryTests.sendScenario(daemon, keys, to: device.token)
        #expect(await listener.waitForExit() == 0, "\(listener.text)")
        #expect(listener.text == ListenCommandTests.screen(id), "\(listener.text)")
        // Trusting the system's roots only, the test CA's certificate is refused: verification is on.
        let untrusted = try StreamingProcess(Daemon.binary, [
            "listen", "--server", daemon.tlsURL, "--secret", device.secret, "--count", "1", "--timeout", "3",
        ])
        defer { untrusted.stop() }
        #expect(await untrusted.waitForExit() != 0)
        try await daemon.terminate()
    }

    // MARK: Helpers

    /// A daemon with a cleartext and a TLS listener, serving a fresh certificate (serial 1001) from a fresh CA.
    static func startTLSDaemon() async throws -> (Daemon, TestPKI) {
        let pki = try await TestPKI()
        let daemon = try Daemon(arguments: [
            "--listen-tls", "127.0.0.1:0", "--tls-cert", pki.certificateFile, "--tls-key", pki.keyFile,
        ])
        try await daemon.start()
        return (daemon, pki)
    }
}

extension Daemon {
    /// The TLS listener's URL, by the name in the certificate.
    var tlsURL: String { "https://localhost:\(tlsPort)" }

    /// Sends SIGHUP (a reload).
    func hangUp() throws {
        guard let process, process.isRunning else { throw DaemonError(message: "daemon not running") }
        kill(process.processIdentifier, SIGHUP)
    }

    /// Waits until the daemon's output contains `text` (once more than it did before is not checked: use
    /// distinct texts).
    func waitForLog(_ text: String, timeout: Duration = .seconds(15)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if log.contains(text) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DaemonError(message: "no '\(text)' in the daemon's log:\n\(log)")
    }
}

/// A throw-away CA and server certificate for `localhost` / `127.0.0.1`, made with the `openssl` command.
struct TestPKI {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var certificateFile: String { directory + "/server.pem" }
    var keyFile: String { directory + "/server.key" }

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory + "/ca.key", "-out", caFile, "-days", "2", "-subj", "/CN=PushRelay Test CA",
        ])
        try await issueServerCertificate(serial: "1001")
    }

    /// Writes a new key and a certificate with `serial` (hex) over the served files.
    func issueServerCertificate(serial: String) async throws {
        let extensions = directory + "/server.ext"
        try Data("""
            subjectAltName=DNS:localhost,IP:127.0.0.1
            basicConstraints=CA:FALSE
            keyUsage=digitalSignature
            extendedKeyUsage=serverAuth
            subjectKeyIdentifier=hash
            authorityKeyIdentifier=keyid

            """.utf8).write(to: URL(fileURLWithPath: extensions))
        let newKey = directory + "/next.key"
        let request = directory + "/server.csr"
        let newCertificate = directory + "/next.pem"
        try await openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", newKey, "-out", request, "-subj", "/CN=localhost",
        ])
        try await openssl([
            "x509", "-req", "-in", request, "-CA", caFile, "-CAkey", directory + "/ca.key",
            "-set_serial", "0x" + serial, "-days", "2", "-out", newCertificate, "-extfile", extensions,
        ])
        // Both in place before anyone reloads (a rename each).
        _ = rename(newKey, keyFile)
        _ = rename(newCertificate, certificateFile)
    }

    @discardableResult
    func openssl(_ arguments: [String]) async throws -> String {
        let result = try await run("openssl", arguments)
        guard result.status == 0 else { throw DaemonError(message: "openssl \(arguments): \(result.stderr)") }
        return result.stdout
    }

    /// curl trusting the test CA.
    func curl(_ arguments: [String]) async throws -> ChildProcessResult {
        try await run("curl", ["-sS", "-m", "30", "--cacert", caFile] + arguments)
    }

    /// The serial number (hex) of the certificate a new connection to `port` is served.
    func servedSerial(port: Int) async throws -> String {
        let script = "openssl s_client -connect 127.0.0.1:\(port) -servername localhost </dev/null 2>/dev/null"
            + " | openssl x509 -noout -serial"
        let result = try await run("/bin/sh", ["-c", script])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "serial=", with: "")
    }

    /// Registers a device over https, as an app would.
    func registerDevice(_ daemon: Daemon, _ keys: ProjectKeys) async throws -> DeviceKeys {
        let body = #"{"project":"\#(keys.project)","app":"br.com.siecola.shop","platform":"ios"}"#
        let result = try await curl([
            "--fail-with-body", "-X", "POST", "\(daemon.tlsURL)/v1/register",
            "-H", "Authorization: key=\(keys.clientKey)", "-H", "Content-Type: application/json", "--data-binary", body,
        ])
        guard result.status == 0 else { throw DaemonError(message: "register failed: \(result.stdout) \(result.stderr)") }
        let json = try jsonObject(result.stdout)
        return DeviceKeys(token: json["token"] as? String ?? "", secret: json["secret"] as? String ?? "")
    }

    /// Posts an FCM body over https with HTTP/1.1, like Postman.
    func send(_ daemon: Daemon, _ body: String, serverKey: String) async throws -> (status: Int, body: String) {
        let result = try await run("curl", [
            "-sS", "-m", "30", "--cacert", caFile, "--http1.1", "-X", "POST", "\(daemon.tlsURL)/fcm/send",
            "-H", "Authorization: key=\(serverKey)", "-H", "Content-Type: application/json", "--data-binary", "@-",
            "-w", "\n%{http_code}",
        ], stdin: body)
        guard result.status == 0 else { throw DaemonError(message: "curl failed: \(result.stderr)") }
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Opens the device's event stream over https with `curl -N` (HTTP/2 through ALPN).
    func openStream(_ daemon: Daemon, secret: String) throws -> StreamingProcess {
        try StreamingProcess("curl", [
            "-sSN", "--cacert", caFile, "\(daemon.tlsURL)/v1/stream", "-H", "Authorization: Bearer \(secret)",
        ])
    }
}
