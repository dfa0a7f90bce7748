import Foundation
import TestSupport
import Testing

/// `pushrelay serve` as a process: it prints the address it bound, answers /healthz on HTTP/1.1 and HTTP/2, and
/// exits cleanly on SIGTERM; a second daemon on its port says so and exits 69.
@Suite(.tags(.endToEnd), .hangGuard) struct ServeHealthzTests {
    @Test
    func serveAnswersHealthzAndStopsOnSIGTERM() async throws {
        let process = Process()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-healthz-\(UUID().uuidString)")
        // Through the signal-unblocking wrapper: the daemon must see SIGTERM.
        ChildProcess.configure(process, Daemon.binary, ["serve", "--init", "--listen", "127.0.0.1:0", "--log-level", "warning", "--data-dir", dataDir.path])
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // First stdout line: "pushrelay listening on http://127.0.0.1:PORT".
        let line = try await Self.firstLine(of: output.fileHandleForReading)
        #expect(line.hasPrefix("pushrelay listening on http://127.0.0.1:"), "\(line)")
        let url = String(line.dropFirst("pushrelay listening on ".count)) + "/healthz"

        for flag in ["--http1.1", "--http2-prior-knowledge"] {
            let curl = try await ChildProcess.run("curl", ["-sS", flag, url])
            #expect(curl.stdout == #"{"status":"ok"}"#, "\(flag): \(curl.stderr)")
            // Every answer says when it was made (RFC 9110 §6.6.1), on both protocols.
            let head = try await ChildProcess.run("curl", ["-sS", flag, "-D", "-", "-o", "/dev/null", url])
            #expect(head.stdout.lowercased().contains("\r\ndate: ") && head.stdout.contains(" GMT\r\n"), "\(flag): \(head.stdout)")
        }

        // A second daemon on the same port stops at once with one line naming the address, exit 69.
        let address = String(line.dropFirst("pushrelay listening on http://".count))
        let second = try await Daemon.cli(["serve", "--listen", address, "--log-level", "warning", "--data-dir", dataDir.path])
        #expect(second.status == 69, "\(second)")
        #expect(second.stderr.contains("pushrelay: cannot listen on \(address): Address already in use"), "\(second.stderr)")

        process.terminate()  // SIGTERM: graceful shutdown
        #expect(await ChildProcess.waitForExit(process))
        #expect(process.terminationStatus == 0)
    }

    static func firstLine(of handle: FileHandle) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                var bytes: [UInt8] = []
                while true {
                    let data = handle.readData(ofLength: 1)
                    if data.isEmpty || data.first == UInt8(ascii: "\n") { break }
                    bytes.append(contentsOf: data)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
    }
}
