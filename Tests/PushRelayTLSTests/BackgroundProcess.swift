import Foundation
import TestSupport

/// A peer server (`openssl s_server`) that runs while a test talks to it; `stop()` ends it (SIGTERM through
/// `timeout`, which also bounds its life).
final class BackgroundProcess: Sendable {
    private let process: Process
    private let outputURL: URL

    init(_ executable: String, _ arguments: [String], timeoutSeconds: Int = 60) throws {
        outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-bg-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["-k", "5", "\(timeoutSeconds)", executable] + arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var output: String { ChildProcess.readText(outputURL.path) }

    /// Waits (bounded) until the output contains `text`.
    func waitForOutput(_ text: String, attempts: Int = 200) async throws {
        for _ in 0..<attempts {
            if output.contains(text) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("no '\(text)' in output: \(output)")
    }

    /// Waits (bounded) for `openssl s_server -accept 127.0.0.1:0`'s `ACCEPT 127.0.0.1:<port>` line and returns the
    /// port the server chose: nothing can take it between a probe and the bind, as with a port picked in advance.
    func acceptedPort(attempts: Int = 200) async throws -> Int {
        for _ in 0..<attempts {
            for line in output.split(separator: "\n") where line.hasPrefix("ACCEPT ") {
                if let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]), port > 0 {
                    return port
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("no 'ACCEPT <address>:<port>' in output: \(output)")
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: outputURL)
    }
}
