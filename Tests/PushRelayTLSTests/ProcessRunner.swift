import Foundation

/// Runs an independent peer (openssl, curl, python3) to completion with a time limit, without blocking a
/// Swift concurrency thread. Output goes through temp files so a chatty process cannot fill a pipe and stall.
enum ProcessRunner {
    struct Result: Sendable {
        var status: Int32
        var standardOutput: String
        var standardError: String
        var combined: String { standardOutput + "\n" + standardError }
    }

    static func run(
        _ executable: String,
        _ arguments: [String],
        standardInput: String? = nil,
        workingDirectory: String? = nil,
        timeoutSeconds: Int = 60
    ) async throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out")
        let errURL = scratch.appendingPathComponent("err")
        let inURL = scratch.appendingPathComponent("in")
        try (standardInput ?? "").write(to: inURL, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["-k", "5", "\(timeoutSeconds)", executable] + arguments
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        let inHandle = try FileHandle(forReadingFrom: inURL)
        defer {
            try? outHandle.close()
            try? errHandle.close()
            try? inHandle.close()
        }
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = inHandle
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return Result(
            status: status,
            standardOutput: readText(outURL),
            standardError: readText(errURL)
        )
    }

    /// The file's text (read through a FileHandle: `String(contentsOf:)` trips LeakSanitizer in swift-foundation).
    static func readText(_ url: URL) -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return "" }
        defer { try? handle.close() }
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }
}
