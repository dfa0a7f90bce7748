import PushRelayCore
import Foundation
import Testing
@testable import PushRelayStore

#if canImport(Glibc)
import Glibc
#endif

/// kill -9 of a writer process: every enqueue that returned before the kill is in the database afterwards.
/// The child is the hidden `pushrelay store-debug crash-writer` command (found in env `PUSHRELAY_BIN`, else
/// `<repo>/.build/debug/pushrelay`); it prints each message id once its enqueue has returned.
@Suite("Store: crash recovery")
struct CrashRecoveryTests {
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["PUSHRELAY_BIN"] {
            return path
        }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.appendingPathComponent(".build/debug/pushrelay").path
    }

    @Test("kill -9 during enqueues loses no acknowledged message")
    func killDuringEnqueues() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try await withStore(.sqlite, in: directory) { store in try await makeFixture(store) }

            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = [
                "store-debug", "crash-writer", "--data-dir", directory, "--device", "\(fixture.device.rawValue)",
                "--count", "1000000", "--concurrency", "16",
            ]
            let output = Pipe()
            process.standardOutput = output
            try process.run()

            // Read acknowledged ids until enough, then SIGKILL; keep what was already written to the pipe.
            let reader = output.fileHandleForReading
            var buffer: [UInt8] = []
            var newlines = 0
            let deadline = ContinuousClock.now + .seconds(120)
            while newlines < 2_000 && ContinuousClock.now < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer += chunk
                newlines += chunk.filter { $0 == UInt8(ascii: "\n") }.count
            }
            kill(process.processIdentifier, SIGKILL)
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer += chunk
            }
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)

            // A line without its newline was being written at the kill: not counted.
            if let last = buffer.lastIndex(of: UInt8(ascii: "\n")) {
                buffer.removeSubrange((last + 1)...)
            } else {
                buffer.removeAll()
            }
            let acknowledged = String(decoding: buffer, as: UTF8.self).split(separator: "\n").compactMap { MessageID($0) }
            #expect(acknowledged.count >= 2_000)

            try await withStore(.sqlite, in: directory) { store in
                var stored: Set<MessageID> = []
                var after: MessageID?
                while true {
                    let page = try await store.pendingMessages(for: fixture.device, after: after, limit: 10_000)
                    guard let last = page.last else { break }
                    stored.formUnion(page.map(\.id))
                    after = last.id
                }
                let missing = acknowledged.filter { !stored.contains($0) }
                #expect(missing.isEmpty, "acknowledged but lost: \(missing.prefix(10))")
                #expect(stored.count >= acknowledged.count)
            }
        }
    }
}
