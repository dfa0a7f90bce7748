import Foundation
import TestSupport
import Testing

/// The client library builds without NIO and without any C module, so that it builds for Apple platforms with
/// Foundation alone. Checked on the build graph SwiftPM planned for this very build (`description.json` beside the
/// binary under test): `targetDependencyMap` is each target's full transitive closure, and only Swift targets have
/// an entry in `swiftTargetScanArgs` (C and system-library modules do not).
@Suite("PushRelayClient's dependency closure", .tags(.endToEnd), .hangGuard)
struct ClientDependencyTests {
    struct BuildGraph {
        var closure: [String: [String]]
        var swiftModules: Set<String>

        init() throws {
            let directory = URL(fileURLWithPath: Daemon.binary).deletingLastPathComponent()
            let data = try Data(contentsOf: directory.appendingPathComponent("description.json"))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            closure = try #require(object["targetDependencyMap"] as? [String: [String]])
            swiftModules = Set(try #require(object["swiftTargetScanArgs"] as? [String: Any]).keys)
        }

        /// The modules in `target`'s closure that are C modules or belong to SwiftNIO.
        func forbidden(in target: String) throws -> [String] {
            try #require(closure[target]).filter { !swiftModules.contains($0) || $0.contains("NIO") }.sorted()
        }
    }

    @Test("PushRelayClient depends on no NIO module and no C module; PushRelayClientNIO does (the check can fail)")
    func noNIONoC() throws {
        let graph = try BuildGraph()
        #expect(try graph.forbidden(in: "PushRelayClient") == [])
        #expect(Set(try #require(graph.closure["PushRelayClient"])) == ["PushRelayWire", "HTTPTypes", "Logging"])
        let nio = try graph.forbidden(in: "PushRelayClientNIO")
        #expect(nio.contains("CNghttp2") && nio.contains("COpenSSL") && nio.contains("NIOCore"))
        #expect(try graph.forbidden(in: "PushRelayWire") == [])
        #expect(try #require(graph.closure["PushRelayWire"]).isEmpty)
    }
}
