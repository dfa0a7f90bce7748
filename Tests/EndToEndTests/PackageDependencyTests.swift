import Foundation
import TestSupport
import Testing

/// Every target of Package.swift declares exactly the modules its sources import (issue 14): no dependency nobody
/// imports, and no module used only because another dependency happened to bring it in. Package.swift is read as
/// text in the form it is written (`let name: Target.Dependency = .product(name: …)` for products, one
/// `name:`/`dependencies: [...]` per target; a target it cannot read fails the test), against the `import` lines
/// (at the start of a line, so that the Python scripts inside test sources do not count) of each target's files.
/// (`swift package describe` cannot run here: the `swift test` running this test holds SwiftPM's lock.)
@Suite("Package.swift's dependencies", .tags(.endToEnd), .hangGuard)
struct PackageDependencyTests {
    /// Modules of the toolchain and the platform, not declared in Package.swift.
    static let platform: Set<String> = [
        "Foundation", "FoundationNetworking", "FoundationEssentials", "Testing", "Glibc", "Musl", "Darwin",
        "Dispatch", "Synchronization", "Observation", "SwiftUI", "Combine", "XCTest", "_Concurrency",
    ]

    struct Target {
        var name: String
        var directory: String
        var dependencies: Set<String>
    }

    /// The targets of Package.swift with their directories and direct dependencies (module names).
    static func targets(of manifest: String) throws -> [Target] {
        func matches(_ pattern: String, in text: String) throws -> [[String]] {
            let regex = try NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators])
            return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
                (0..<match.numberOfRanges).map { index in
                    Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
                }
            }
        }
        var products: [String: String] = [:]
        for groups in try matches(#"let (\w+): Target\.Dependency = \.product\(name: "(\w+)""#, in: manifest) {
            products[groups[1]] = groups[2]
        }
        var targets: [Target] = []
        let declarations = try matches(
            #"\.(target|testTarget|executableTarget)\(\s*name: "(\w+)",\s*(?:path: "([^"]+)",\s*)?dependencies: \[([^\]]*)\](?:,\s*path: "([^"]+)")?"#,
            in: manifest)
        for groups in declarations {
            let (kind, name, list) = (groups[1], groups[2], groups[4])
            let path = groups[3].isEmpty ? groups[5] : groups[3]
            var dependencies: Set<String> = []
            for token in list.split(whereSeparator: { ",\n ".contains($0) }) where !token.isEmpty {
                if token.hasPrefix("\"") {
                    dependencies.insert(String(token.dropFirst().dropLast()))
                } else {
                    dependencies.insert(try #require(products[String(token)], "unknown dependency \(token) of \(name)"))
                }
            }
            let directory = path.isEmpty ? (kind == "testTarget" ? "Tests/" : "Sources/") + name : path
            targets.append(Target(name: name, directory: directory, dependencies: dependencies))
        }
        return targets
    }

    @Test("each target's declared dependencies are exactly the modules it imports")
    func declaredIsImported() throws {
        let root = OperationsTests.repository.path
        let manifest = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        let targets = try Self.targets(of: manifest)
        // Every target with a dependency list (the package's own list is the extra one): a
        // target the pattern misses fails here.
        let lists = manifest.components(separatedBy: "dependencies: [").count - 1
        #expect(targets.count == lists - 1, "targets read: \(targets.map(\.name))")
        let pattern = try NSRegularExpression(
            pattern: #"^(?:@testable |@_exported |public |internal |package )*import (?:struct |class |enum |func )?([A-Z][A-Za-z0-9_]*)"#,
            options: .anchorsMatchLines)
        for target in targets {
            let files = try #require(FileManager.default.enumerator(atPath: root + "/" + target.directory))
            var imports: Set<String> = []
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: root + "/" + target.directory + "/" + file, encoding: .utf8)
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    imports.insert(String(text[Range(match.range(at: 1), in: text)!]))
                }
            }
            let unused = target.dependencies.subtracting(imports).sorted()
            let undeclared = imports.subtracting(target.dependencies).subtracting(Self.platform)
                .subtracting([target.name]).sorted()
            #expect(unused.isEmpty, "\(target.name) declares \(unused) and never imports it")
            #expect(undeclared.isEmpty, "\(target.name) imports \(undeclared) without declaring it")
        }
    }
}
