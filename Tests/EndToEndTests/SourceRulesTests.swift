import Foundation
import TestSupport
import Testing

/// Rules about how the sources are written that the compiler does not check.
@Suite("Source rules", .tags(.endToEnd))
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
}
