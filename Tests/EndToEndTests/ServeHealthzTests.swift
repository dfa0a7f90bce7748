import Foundation
import Testing

/// `pushrelay serve` as a process: it prints the address it bound, answers /healthz on HTTP/1.1 and HTTP/2, and
/// exits cleanly on SIGTERM.
@Suite struct ServeHealthzTests {
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["PUSHRELAY_BIN"] { return path }
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repo.appendingPathComponent(".build/debug/pushrelay").path
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServeHealthzTests.binary)))
    func serveAnswersHealthzAndStopsOnSIGTERM() async throws {
        let process = Process()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-healthz-\(UUID().uuidString)")
        // Through the signal-unblocking wrapper: the daemon must see SIGTERM.
        configure(process, Self.binary, ["serve", "--listen", "127.0.0.1:0", "--log-level", "warning", "--data-dir", dataDir.path])
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // First stdout line: "pushrelay listening on http://127.0.0.1:PORT".
        let line = try await Self.firstLine(of: output.fileHandleForReading)
        #expect(line.hasPrefix("pushrelay listening on http://127.0.0.1:"), "\(line)")
        let url = String(line.dropFirst("pushrelay listening on ".count)) + "/healthz"

        for flag in ["--http1.1", "--http2-prior-knowledge"] {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            curl.arguments = ["curl", "-sS", flag, url]
            let body = Pipe()
            curl.standardOutput = body
            try curl.run()
            let data = body.fileHandleForReading.readDataToEndOfFile()
            curl.waitUntilExit()
            #expect(String(decoding: data, as: UTF8.self) == #"{"status":"ok"}"#, "\(flag)")
        }

        process.terminate()  // SIGTERM: graceful shutdown
        let status = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
        #expect(status == 0)
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
