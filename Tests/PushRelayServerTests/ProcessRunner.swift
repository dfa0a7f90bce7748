import Foundation

/// Runs a command to completion and captures its output (for the deploy-file tests).
struct ProcessResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up in PATH) with `arguments`; output is captured in files so that
    /// a large output cannot block the child.
    static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        currentDirectory: String? = nil
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [executable] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-run-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("out")
        let errURL = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return ProcessResult(
            status: process.terminationStatus,
            standardOutput: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        )
    }

    /// Whether `name` is an executable in PATH.
    static func exists(_ name: String) -> Bool {
        (try? run("sh", ["-c", "command -v \(name)"]).status) == 0
    }
}

/// A fresh temporary directory.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/\(prefix)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The daemon binary: `PUSHRELAY_BIN`, else `<repo>/.build/debug/pushrelay`.
let pushrelayBinary: String = ProcessInfo.processInfo.environment["PUSHRELAY_BIN"]
    ?? repositoryRoot + "/.build/debug/pushrelay"
