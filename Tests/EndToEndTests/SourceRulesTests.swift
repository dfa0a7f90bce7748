import Foundation
import TestSupport
import Testing

/// Rules about how the sources are written that the compiler does not check.
@Suite("Source rules", .tags(.endToEnd), .hangGuard)
struct SourceRulesTests {
    /// A function value kept directly in a lock box (`NIOLockedValueBox<((X) -> Y)?>`, the client's `LockedValue`)
    /// gains a re-abstraction thunk with every `withLockedValue { $0 }`: each call costs more than the one before,
    /// and after about a million reads a call overflows the stack. A PostgreSQL node read its commit observer so
    /// once per `NOTIFY` (2026-11-27: 0.5 ms of CPU per message in the cross-node benchmark, and a crash after about
    /// a million notifications). Such functions live in a `FunctionSlot` (or a class of their own) instead.
    @Test("no function value is kept directly in a lock box")
    func noFunctionInLockBox() throws {
        let root = OperationsTests.repository.path + "/Sources"
        let pattern = try NSRegularExpression(
            pattern: #"(?:NIOLockedValueBox|LockedValue)<\(*\s*(?:@Sendable\s*)?(?:@escaping\s*)?\([^<>]*\)\s*(?:async\s*)?(?:throws\s*)?->"#)
        let files = try #require(FileManager.default.enumerator(atPath: root))
        var found: [String] = []
        var read = 0
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            read += 1
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = String(line)
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }  // comments may name it
                if pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                    found.append("Sources/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(read > 100, "read \(read) source files")
        #expect(found.isEmpty, "a function in a lock box (use FunctionSlot):\n\(found.joined(separator: "\n"))")
    }

    /// Every end-to-end suite carries the ``hangGuard`` time limit: without it, a test that waits for ever (as
    /// `ClientLibraryTests.handlerThrows` did in CI73, a client's `run()` that never returned) holds the whole run
    /// with no name to show for it.
    @Test("every end-to-end suite has the hang guard")
    func everyEndToEndSuiteHasTheHangGuard() throws {
        let root = OperationsTests.repository.path + "/Tests/EndToEndTests"
        let files = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasSuffix(".swift") }
        var suites = 0
        var unguarded: [String] = []
        for file in files {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasPrefix("@Suite") {
                suites += 1
                if !line.contains(".hangGuard") { unguarded.append("\(file): \(line)") }
            }
        }
        #expect(suites > 20, "found \(suites) suites")
        #expect(unguarded.isEmpty, "suites without .hangGuard:\n\(unguarded.joined(separator: "\n"))")
    }
}
