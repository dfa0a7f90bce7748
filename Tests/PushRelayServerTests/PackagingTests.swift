import Foundation
import TestSupport
import Testing

/// `deploy/install.sh` into a temporary root, and the `.deb` from `scripts/build-deb.sh`.
@Suite("Packaging: install.sh and the .deb", .serialized, .tags(.peer))
struct PackagingTests {
    private static let manager = FileManager.default

    private static func mode(_ path: String) throws -> Int {
        (try manager.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("install.sh with DESTDIR installs, keeps a modified config on reinstall, uninstalls, purges")
    func installIntoDestdir() async throws {
        let root = try makeTemporaryDirectory("pushrelay-destdir")
        defer { try? Self.manager.removeItem(atPath: root) }
        let binary = root + "-binary"
        _ = Self.manager.createFile(atPath: binary, contents: Data("#!/bin/sh\necho v1\n".utf8),
                                    attributes: [.posixPermissions: 0o755])
        defer { try? Self.manager.removeItem(atPath: binary) }
        let script = repositoryRoot + "/deploy/install.sh"
        let environment = ["DESTDIR": root]

        let first = try await ChildProcess.run(script, ["--binary", binary], environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        for (path, expectedMode) in [
            ("/usr/bin/pushrelay", 0o755), ("/etc/systemd/system/pushrelay.service", 0o644),
            ("/etc/pushrelay/pushrelay.conf", 0o640), ("/etc/pushrelay", 0o750), ("/var/lib/pushrelay", 0o700),
            ("/usr/share/doc/pushrelay/pushrelay.conf", 0o644),
        ] {
            #expect(Self.manager.fileExists(atPath: root + path), "\(path) missing")
            #expect(try Self.mode(root + path) == expectedMode, "\(path) mode")
        }
        #expect(
            try String(contentsOfFile: root + "/etc/systemd/system/pushrelay.service", encoding: .utf8)
                == String(contentsOfFile: repositoryRoot + "/deploy/pushrelay.service", encoding: .utf8)
        )

        // Reinstall with a new binary: the binary is replaced, the operator's config and data are kept.
        try "listen = [\"0.0.0.0:9999\"]\n".write(toFile: root + "/etc/pushrelay/pushrelay.conf", atomically: true, encoding: .utf8)
        _ = Self.manager.createFile(atPath: root + "/var/lib/pushrelay/pushrelay.sqlite", contents: Data("db".utf8))
        try "#!/bin/sh\necho v2\n".write(toFile: binary, atomically: false, encoding: .utf8)
        let second = try await ChildProcess.run(script, ["--binary", binary], environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("kept existing"))
        #expect(try String(contentsOfFile: root + "/usr/bin/pushrelay", encoding: .utf8).contains("v2"))
        #expect(try String(contentsOfFile: root + "/etc/pushrelay/pushrelay.conf", encoding: .utf8).contains("9999"))

        // Uninstall keeps config and data.
        let uninstall = try await ChildProcess.run(script, ["--uninstall"], environment: environment)
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(!Self.manager.fileExists(atPath: root + "/usr/bin/pushrelay"))
        #expect(!Self.manager.fileExists(atPath: root + "/etc/systemd/system/pushrelay.service"))
        #expect(Self.manager.fileExists(atPath: root + "/etc/pushrelay/pushrelay.conf"))
        #expect(Self.manager.fileExists(atPath: root + "/var/lib/pushrelay/pushrelay.sqlite"))

        // Purge removes them; a second purge is harmless.
        for _ in 0..<2 {
            let purge = try await ChildProcess.run(script, ["--uninstall", "--purge"], environment: environment)
            #expect(purge.status == 0, "\(purge.stderr)")
        }
        #expect(!Self.manager.fileExists(atPath: root + "/etc/pushrelay"))
        #expect(!Self.manager.fileExists(atPath: root + "/var/lib/pushrelay"))

        // Mistakes are refused.
        #expect(try await ChildProcess.run(script, ["--purge"], environment: environment).status == 2)
        #expect(try await ChildProcess.run(script, ["--binary", root + "/none"], environment: environment).status == 1)
    }

    /// Builds the package from the already built debug binary (`PUSHRELAY_BIN` or `.build/debug/pushrelay`), not a
    /// release build, to keep the suite fast; `scripts/build-deb.sh` without `--binary` builds the release.
    @Test("the .deb holds the binary, unit, config (a conffile) and docs, and declares its dependencies")
    func debianPackage() async throws {
        #expect(ChildProcess.available("dpkg-deb"), "dpkg-deb missing: run scripts/setup.sh --test")
        #expect(FileManager.default.isExecutableFile(atPath: pushrelayBinary), "build first: \(pushrelayBinary)")
        let output = try makeTemporaryDirectory("pushrelay-deb")
        defer { try? Self.manager.removeItem(atPath: output) }
        let build = try await ChildProcess.run(
            repositoryRoot + "/scripts/build-deb.sh",
            ["--binary", pushrelayBinary, "--output", output],
            environment: ["PUSHRELAY_VERSION": "0.1.0~test", "PUSHRELAY_DEB_COMPRESSION": "none"]
        )
        #expect(build.status == 0, "\(build.stderr)")
        let deb = try #require(build.stdout.split(separator: "\n").last.map(String.init))
        #expect(deb.hasPrefix(output + "/pushrelay_0.1.0~test_") && deb.hasSuffix(".deb"))

        let contents = try await ChildProcess.run("dpkg-deb", ["-c", deb])
        #expect(contents.status == 0)
        for (path, permissions) in [
            ("./usr/bin/pushrelay", "-rwxr-xr-x root/root"),
            ("./lib/systemd/system/pushrelay.service", "-rw-r--r-- root/root"),
            ("./etc/pushrelay/pushrelay.conf", "-rw-r----- root/root"),
            ("./usr/share/doc/pushrelay/examples/grafana-dashboard.json", "-rw-r--r-- root/root"),
            ("./usr/share/doc/pushrelay/examples/prometheus.yml", "-rw-r--r-- root/root"),
        ] {
            let line = contents.stdout.split(separator: "\n").first { $0.hasSuffix(" " + path) }
            #expect(line?.hasPrefix(permissions) == true, "\(path): \(String(describing: line))")
        }

        let info = try await ChildProcess.run("dpkg-deb", ["-I", deb])
        #expect(info.status == 0)
        let depends = info.stdout.split(separator: "\n").first { $0.contains("Depends:") } ?? ""
        for dependency in ["libnghttp2-14", "libssl3", "libsqlite3-0", "adduser"] {
            #expect(depends.contains(dependency), "Depends lacks \(dependency): \(depends)")
        }
        for member in ["control", "conffiles", "postinst", "prerm", "postrm"] {
            #expect(info.stdout.contains(" \(member)"), "no \(member) in the control archive")
        }
        let conffiles = try await ChildProcess.run("dpkg-deb", ["-f", deb, "Package"])
        #expect(conffiles.stdout == "pushrelay\n")
        let extracted = try makeTemporaryDirectory("pushrelay-deb-control")
        defer { try? Self.manager.removeItem(atPath: extracted) }
        #expect(try await ChildProcess.run("dpkg-deb", ["-e", deb, extracted]).status == 0)
        #expect(try String(contentsOfFile: extracted + "/conffiles", encoding: .utf8) == "/etc/pushrelay/pushrelay.conf\n")
        let postinst = try String(contentsOfFile: extracted + "/postinst", encoding: .utf8)
        #expect(postinst.contains("adduser --system --group"))

        // The packaged binary accepts the packaged config.
        let files = try makeTemporaryDirectory("pushrelay-deb-files")
        defer { try? Self.manager.removeItem(atPath: files) }
        #expect(try await ChildProcess.run("dpkg-deb", ["-x", deb, files]).status == 0)
        let check = try await ChildProcess.run(files + "/usr/bin/pushrelay", ["check-config", files + "/etc/pushrelay/pushrelay.conf"])
        #expect(check.status == 0, "\(check.stderr)")
    }
}
