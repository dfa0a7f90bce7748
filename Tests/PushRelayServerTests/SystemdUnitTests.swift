import Foundation
import TestSupport
import Testing

/// `deploy/pushrelay.service` checked by systemd's own tools, offline (no running systemd needed).
@Suite("systemd unit: verify and security", .serialized, .tags(.peer))
struct SystemdUnitTests {
    static let unitPath = repositoryRoot + "/deploy/pushrelay.service"

    /// A root with the host's system units (for the targets the unit refers to) and stand-ins for the commands the
    /// unit runs, so that `systemd-analyze verify --root` checks the unit as installed.
    private static func makeRoot(unitText: String) throws -> String {
        #expect(ChildProcess.available("systemd-analyze"), "systemd-analyze missing: run scripts/setup.sh --test")
        let root = try makeTemporaryDirectory("pushrelay-unit-root")
        let manager = FileManager.default
        for directory in ["usr/bin", "bin", "usr/lib/systemd", "etc/systemd/system"] {
            try manager.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        try manager.copyItem(atPath: "/usr/lib/systemd/system", toPath: root + "/usr/lib/systemd/system")
        for command in ["usr/bin/pushrelay", "bin/kill"] {
            _ = manager.createFile(atPath: root + "/" + command, contents: Data("#!/bin/sh\n".utf8),
                               attributes: [.posixPermissions: 0o755])
        }
        try unitText.write(toFile: root + "/etc/systemd/system/pushrelay.service", atomically: true, encoding: .utf8)
        return root
    }

    private static func verify(_ unitText: String) async throws -> ChildProcessResult {
        let root = try makeRoot(unitText: unitText)
        defer { try? FileManager.default.removeItem(atPath: root) }
        return try await ChildProcess.run("systemd-analyze", ["verify", "--root=\(root)", "pushrelay.service"])
    }

    private static func exposure(_ unitText: String) async throws -> (Double?, ChildProcessResult) {
        let root = try makeRoot(unitText: unitText)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await ChildProcess.run(
            "systemd-analyze",
            ["security", "--offline=true", "--threshold=25", "--no-pager", "--root=\(root)", "pushrelay.service"]
        )
        // "→ Overall exposure level for pushrelay.service: 1.2 OK 🙂"
        let line = (result.stdout + result.stderr).split(separator: "\n")
            .first { $0.contains("Overall exposure level") }
        let value = line?.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        return (value, result)
    }

    static var unitText: String {
        get throws { try String(contentsOfFile: unitPath, encoding: .utf8) }
    }

    @Test("systemd-analyze verify passes without a single warning")
    func verifyPasses() async throws {
        let result = try await Self.verify(try Self.unitText)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test("verify catches a misspelt directive (the check can fail)")
    func verifyCatchesTypos() async throws {
        let broken = try Self.unitText.replacingOccurrences(of: "ProtectHome=yes", with: "ProtectHomes=yes")
        let result = try await Self.verify(broken)
        #expect(result.stderr.contains("Unknown key"), "\(result.stderr)")
    }

    @Test("systemd-analyze security --offline=true rates the unit OK or better (exposure <= 2.5)")
    func securityExposure() async throws {
        let (value, result) = try await Self.exposure(try Self.unitText)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let exposure = try #require(value, "no exposure line in: \(result.stdout)")
        #expect(exposure <= 2.5)
        #expect(result.stdout.contains(" OK") || result.stdout.contains("SAFE"))
    }

    @Test("without the sandboxing lines the exposure is far above 2.5 (the check can fail)")
    func securityWithoutSandboxing() async throws {
        let keep = try Self.unitText.split(separator: "\n").filter { line in
            !line.hasPrefix("Protect") && !line.hasPrefix("Private") && !line.hasPrefix("Restrict")
                && !line.hasPrefix("SystemCall") && !line.hasPrefix("Capability") && !line.hasPrefix("NoNewPrivileges")
        }
        let (value, result) = try await Self.exposure(keep.joined(separator: "\n") + "\n")
        #expect(result.status != 0)
        #expect((value ?? 0) > 2.5)
    }

    @Test("the unit has the directives the operations guide promises")
    func requiredDirectives() throws {
        let lines = Set(try Self.unitText.split(separator: "\n").map(String.init))
        for directive in [
            "Type=notify",
            "ExecStart=/usr/bin/pushrelay serve --config /etc/pushrelay/pushrelay.conf",
            "ExecReload=/bin/kill -HUP $MAINPID",
            "User=pushrelay",
            "StateDirectory=pushrelay",
            "LimitNOFILE=262144",
            "LimitCORE=0",
            "MemoryMax=4G",
            "TasksMax=512",
            "TimeoutStopSec=30s",
            "WatchdogSec=30s",
            "CapabilityBoundingSet=",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
            "SystemCallFilter=@system-service",
            "MemoryDenyWriteExecute=yes",
            "UMask=0077",
        ] {
            #expect(lines.contains(directive), "missing \(directive)")
        }
    }
}
