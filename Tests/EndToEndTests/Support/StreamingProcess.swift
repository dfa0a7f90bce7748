import Foundation
import TestSupport

/// A long-running child (a `curl -N` event-stream reader, a listener) whose output is read while it runs.
final class StreamingProcess: @unchecked Sendable {
    let process = Process()
    private let output = OutputCollector()

    /// Starts `program`; its standard output is read into ``text``, and with `standardError` its standard error
    /// too (else it is discarded).
    init(_ program: String, _ arguments: [String], standardError: Bool = false) throws {
        ChildProcess.configure(process, program, arguments)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = standardError ? pipe : FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        output.attach(pipe)
        try process.run()
    }

    deinit { stop() }

    var text: String { output.text }

    /// Waits until the output satisfies `condition`, or throws after `timeout`.
    @discardableResult
    func waitFor(
        timeout: Duration = .seconds(10),
        _ what: String,
        _ condition: (String) -> Bool
    ) async throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            let text = output.text
            if condition(text) { return text }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw DaemonError(message: "timed out waiting for \(what); output so far:\n\(output.text)")
    }

    /// Waits at most `timeout` (default 60 s) for the process to exit and returns its status; `nil` if it still runs.
    func waitForExit(timeout: Duration = .seconds(60)) async -> Int32? {
        await ChildProcess.waitForExit(process, timeout: timeout) ? process.terminationStatus : nil
    }

    /// Ends the process (SIGTERM) and reaps it.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}

/// One server-sent event as read from a stream's text.
struct ServerSentEvent: Equatable {
    var id: String?
    var data: String
}

/// Parses the complete events of an event-stream text (comments skipped).
func parseEvents(_ text: String) -> [ServerSentEvent] {
    var events: [ServerSentEvent] = []
    let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
    let blocks = normalized.components(separatedBy: "\n\n")
    for block in blocks.dropLast() {  // the last piece may be incomplete
        var id: String?
        var data: [String] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix(":") { continue }
            if line.hasPrefix("id:") { id = line.dropFirst(3).trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("data:") { data.append(String(line.dropFirst(5)).trimmingCharacters(in: .whitespaces)) }
        }
        if !data.isEmpty { events.append(ServerSentEvent(id: id, data: data.joined(separator: "\n"))) }
    }
    return events
}

/// Parses a JSON object from text.
func jsonObject(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw DaemonError(message: "not a JSON object: \(text)")
    }
    return object
}
