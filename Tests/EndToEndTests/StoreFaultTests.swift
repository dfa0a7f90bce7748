import Foundation
import TestSupport
import Testing

/// The store failing under the real daemon (issue 12, item 6): a full disk on a small tmpfs in the daemon's own
/// mount namespace; a read-only, missing, empty or damaged store at start. Sends are answered
/// `Unavailable` with `Retry-After`, `/readyz` fails while commits fail and recovers by itself, nothing accepted is
/// lost; a store that is not there or is damaged stops `serve` with one line.
///
/// Needs root (mount(2) in a private namespace; CI runs as root) and util-linux's `unshare` and `nsenter`.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct StoreFaultTests {
    /// `serve` without `--init` on `dataDir`, at most 30 s; (status, stderr).
    static func serveWithoutInit(_ dataDir: String) async throws -> (status: Int32, stderr: String) {
        let result = try await run("timeout", ["30", Daemon.binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir])
        return (result.status, result.stderr)
    }

    static func temporaryDirectory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a missing or empty store stops serve with one line and exit 66; a damaged one with exit 65; store init and serve --init create one")
    func missingEmptyOrDamagedStore() async throws {
        let missing = try Self.temporaryDirectory("missing")
        let noStore = try await Self.serveWithoutInit(missing)
        #expect(noStore.status == 66, "\(noStore)")
        #expect(noStore.stderr.contains("no store at \(missing)/pushrelay.sqlite"), "\(noStore.stderr)")
        #expect(noStore.stderr.contains("pushrelay serve --init") && noStore.stderr.contains("project create"))
        // One line of its own (log lines, e.g. a warning about the environment, may come before it).
        #expect(noStore.stderr.split(separator: "\n").filter { $0.hasPrefix("pushrelay:") }.count == 1, "\(noStore.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing + "/pushrelay.sqlite"), "nothing was created")

        _ = FileManager.default.createFile(atPath: missing + "/pushrelay.sqlite", contents: Data())
        let empty = try await Self.serveWithoutInit(missing)
        #expect(empty.status == 66 && empty.stderr.contains("is empty"), "\(empty)")

        // A real store whose header is overwritten: not a database.
        let garbled = try Self.temporaryDirectory("garbled")
        #expect(try await Daemon.cli(["project", "create", "shop", "--data-dir", garbled]).status == 0)
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: garbled + "/pushrelay.sqlite"))
        try file.write(contentsOf: Data(repeating: 0x5A, count: 100))
        try file.close()
        let notADatabase = try await Self.serveWithoutInit(garbled)
        #expect(notADatabase.status == 65, "\(notADatabase)")
        #expect(notADatabase.stderr.contains("cannot open the store: corrupt"), "\(notADatabase.stderr)")
        // The CLI's commands stop on it as serve does: one line, 65, not a usage error (64 with a usage banner).
        let listed = try await Daemon.cli(["project", "list", "--data-dir", garbled])
        #expect(listed.status == 65, "\(listed)")
        #expect(listed.stderr.contains("pushrelay: cannot open the store:") && !listed.stderr.contains("Usage:"), "\(listed.stderr)")

        // A store with a damaged table page: PRAGMA quick_check finds it.
        let damaged = try Self.temporaryDirectory("damaged")
        let keys = try jsonObject(try await Daemon.cli(["project", "create", "shop", "--data-dir", damaged, "--json"]).stdout)
        #expect(keys["server_key"] is String)
        let script = """
            import sqlite3, sys
            path = sys.argv[1]
            db = sqlite3.connect(path)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'projects'").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
            db.close()
            with open(path, "r+b") as f:
                f.seek((page - 1) * size)
                f.write(b"\\xff" * size)
            """
        let corrupt = try await run("python3", ["-c", script, damaged + "/pushrelay.sqlite"])
        #expect(corrupt.status == 0, "\(corrupt.stderr)")
        let check = try await Self.serveWithoutInit(damaged)
        #expect(check.status == 65, "\(check)")
        #expect(check.stderr.contains("corrupt"), "\(check.stderr)")

        // `store init` creates an empty store once, and leaves an existing one alone.
        let initialized = try Self.temporaryDirectory("init")
        let first = try await Daemon.cli(["store", "init", "--data-dir", initialized])
        #expect(first.status == 0 && first.stdout.contains("created \(initialized)/pushrelay.sqlite"), "\(first)")
        let second = try await Daemon.cli(["store", "init", "--data-dir", initialized])
        #expect(second.status == 0 && second.stdout.contains("exists; left as it is"), "\(second)")
        let projects = try await Daemon.cli(["project", "list", "--data-dir", initialized])
        #expect(projects.status == 0 && projects.stdout.isEmpty, "\(projects)")

        // Only `store init` and `project create` create a store: the other commands on a wrong --data-dir exit 66,
        // as serve does, and leave nothing behind for a daemon to serve empty.
        let nowhere = try Self.temporaryDirectory("nowhere") + "/missing"
        for command in [["project", "list"], ["project", "rotate-key", "shop"], ["project", "delete", "shop"],
                        ["project", "service-account", "shop"]] {
            let refused = try await Daemon.cli(command + ["--data-dir", nowhere])
            #expect(refused.status == 66, "\(command): \(refused)")
            #expect(refused.stderr.contains("pushrelay store init"), "\(command): \(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: nowhere), "\(command) created \(nowhere)")
        }
        let created = try await Daemon.cli(["project", "create", "shop", "--data-dir", nowhere])
        #expect(created.status == 0 && FileManager.default.fileExists(atPath: nowhere + "/pushrelay.sqlite"), "\(created)")

        // The CLI finds the store as serve does: --config's (or PUSHRELAY_CONFIG's) data_dir, unless --data-dir says
        // otherwise.
        let configured = try Self.temporaryDirectory("configured")
        let configFile = configured + "/pushrelay.conf"
        try "data_dir = \"\(configured)/data\"\n".write(toFile: configFile, atomically: true, encoding: .utf8)
        let viaFlag = try await Daemon.cli(["project", "create", "news", "--config", configFile])
        #expect(viaFlag.status == 0 && FileManager.default.fileExists(atPath: configured + "/data/pushrelay.sqlite"), "\(viaFlag)")
        let viaEnvironment = try await run(Daemon.binary, ["project", "list"], environment: ["PUSHRELAY_CONFIG": configFile])
        #expect(viaEnvironment.status == 0 && viaEnvironment.stdout.hasPrefix("news\t"), "\(viaEnvironment)")
        let overridden = try await Daemon.cli(["project", "list", "--config", configFile, "--data-dir", nowhere])
        #expect(overridden.status == 0 && overridden.stdout.hasPrefix("shop\t"), "\(overridden)")

        // --init creates a missing store and serves.
        let fresh = try Daemon()
        try await fresh.start()
        #expect(FileManager.default.fileExists(atPath: fresh.dataDir.path + "/pushrelay.sqlite"))
        #expect(try await OperationsTests.get("\(fresh.baseURL)/readyz").status == 200)
    }

    /// Runs the daemon with its data directory on a tmpfs of `size` mounted in a private mount namespace, seeded
    /// with the store in `seed`.
    static func daemonOnTmpfs(seed: String, size: String) throws -> Daemon {
        let dataDir = try temporaryDirectory("tmpfs")
        // unshare runs the script in the new namespace: $0 the size, $1 the directory, $2 the seed, then the
        // daemon's command line.
        let script = #"set -e; size="$0"; dir="$1"; seed="$2"; shift 2; "#
            + #"mount -t tmpfs -o size="$size" tmpfs "$dir"; cp "$seed/pushrelay.sqlite" "$dir/"; exec "$@""#
        return try Daemon(
            dataDir: URL(fileURLWithPath: dataDir),
            arguments: ["--metrics-interval", "1s", "--device-message-rate", "0"],
            launcher: ["unshare", "-m", "--propagation", "private", "sh", "-c", script, size, dataDir, seed])
    }

    /// `mount -o OPTIONS` on the daemon's data directory, inside its namespace.
    static func remount(_ daemon: Daemon, _ options: String) async throws {
        let pid = try #require(daemon.process?.processIdentifier)
        let result = try await run("nsenter", ["-t", "\(pid)", "-m", "mount", "-o", "remount,\(options)", daemon.dataDir.path])
        #expect(result.status == 0, "remount \(options): \(result.stderr)")
    }

    /// POSTs a send with curl and returns (status, headers + body).
    static func send(_ daemon: Daemon, _ body: String, serverKey: String) async throws -> (status: Int, text: String) {
        let result = try await run("curl", [
            "-sS", "-i", "-X", "POST", "\(daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", "@-", "-w", "\n%{http_code}",
        ], stdin: body)
        var lines = result.stdout.components(separatedBy: "\n")
        let status = Int(lines.removeLast()) ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Opens the device's stream and waits until every id of `accepted` has arrived.
    static func expectDelivered(_ accepted: [String], _ daemon: Daemon, secret: String) async throws {
        let stream = try daemon.openStream(secret: secret)
        defer { stream.stop() }
        let wanted = Set(accepted)
        let text = try await stream.waitFor("every accepted message") { text in
            wanted.isSubset(of: Set(parseEvents(text).compactMap(\.id)))
        }
        #expect(wanted.isSubset(of: Set(parseEvents(text).compactMap(\.id))))
    }

    /// Polls `/readyz` until its status is `status`, at most 30 s; the last answer.
    static func waitForReadiness(_ daemon: Daemon, _ status: Int) async throws -> (status: Int, body: String) {
        try await poll(for: .seconds(30)) { try await OperationsTests.get("\(daemon.baseURL)/readyz") }
            until: { $0.status == status }
    }

    /// The `-wal` file removed under a running daemon (an operator's `rm`, a cleanup script): SQLite writes on
    /// through its open descriptor without an error, so the sends after would be answered 200 and lost at the next
    /// crash, with those before that were not yet checkpointed. The daemon notices within a second: what was
    /// committed is copied into the database file, sends answer `Unavailable`, `/readyz` says why; after a `kill -9`
    /// and a restart every message answered 200 is delivered.
    @Test("the WAL file removed under the daemon: Unavailable and /readyz 503 until a restart; kill -9 loses nothing answered")
    func walRemovedUnderTheDaemon() async throws {
        let daemon = try Daemon(arguments: ["--metrics-interval", "1s", "--device-message-rate", "0"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        var accepted: [String] = []
        func send(_ n: Int) async throws -> (status: Int, body: String) {
            let answer = try await daemon.send(#"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            if answer.status == 200 { accepted.append(try messageID(ofSendResponse: answer.body)) }
            return answer
        }
        for n in 0..<20 { #expect(try await send(n).status == 200) }
        let wal = daemon.dataDir.appendingPathComponent("pushrelay.sqlite-wal").path
        #expect(FileManager.default.fileExists(atPath: wal))
        try FileManager.default.removeItem(atPath: wal)

        // Sends go on being answered for at most the watch's interval, then Unavailable.
        var refused: (status: Int, body: String)?
        for n in 20..<2000 {
            let answer = try await send(n)
            if answer.status != 200 {
                refused = answer
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let refusal = try #require(refused, "sends were still accepted 40 s after the WAL was removed")
        #expect(refusal.status == 503 && refusal.body.contains("Unavailable"), "\(refusal)")
        let ready = try await Self.waitForReadiness(daemon, 503)
        #expect(ready.status == 503 && ready.body.contains("was removed or replaced"), "\(ready)")
        print("WAL removed: \(accepted.count - 20) sends accepted before the daemon noticed")

        try await daemon.kill9()
        try await daemon.start()
        try await Self.expectDelivered(accepted, daemon, secret: device.secret)
        #expect(try await Self.send(daemon, #"{"to": "\#(device.token)", "data": {"n": "after"}}"#, serverKey: keys.serverKey).status == 200)
        try await daemon.terminate()
    }

    @Test("disk full: Unavailable with Retry-After, /readyz 503 with the reason, recovery without a restart, nothing accepted lost; a read-only data directory stops serve")
    func diskFullAndReadOnly() async throws {
        let seed = try Self.temporaryDirectory("seed")
        let created = try await Daemon.cli(["project", "create", "shop", "--data-dir", seed, "--json"])
        let keys = try jsonObject(created.stdout)
        let serverKey = try #require(keys["server_key"] as? String)
        let clientKey = try #require(keys["client_key"] as? String)
        let daemon = try Self.daemonOnTmpfs(seed: seed, size: "650k")
        try await daemon.start()
        let device = try await daemon.registerDevice(
            ProjectKeys(project: "shop", senderID: "", serverKey: serverKey, clientKey: clientKey))
        #expect(try await OperationsTests.get("\(daemon.baseURL)/readyz").status == 200)

        // Fill the disk: 3 KB messages until one is refused.
        let body = #"{"to":"\#(device.token)","data":{"filler":"\#(String(repeating: "x", count: 3000))"}}"#
        var accepted: [String] = []
        var refusal: (status: Int, text: String)?
        for _ in 0..<1000 {
            let answer = try await Self.send(daemon, body, serverKey: serverKey)
            guard answer.status == 200, let json = answer.text.split(separator: "\r\n\r\n").last,
                let id = try? messageID(ofSendResponse: String(json))
            else {
                refusal = answer
                break
            }
            accepted.append(id)
        }
        let refused = try #require(refusal, "the 650 KiB disk never filled")
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.text.lowercased().contains("retry-after:"), "\(refused.text)")
        #expect(refused.text.contains("Unavailable"), "\(refused.text)")
        #expect(accepted.count >= 5 && accepted.count < 100, "accepted before the disk filled: \(accepted.count)")
        print("disk full after \(accepted.count) sends")
        let failing = try await Self.waitForReadiness(daemon, 503)
        #expect(failing.status == 503 && failing.body.contains("store cannot commit"), "\(failing)")
        #expect(failing.body.contains("full"), "\(failing.body)")

        // Room again: /readyz recovers with no send arriving (the relay probes), then sends are accepted.
        try await Self.remount(daemon, "size=16m")
        let recovered = try await Self.waitForReadiness(daemon, 200)
        #expect(recovered.status == 200, "\(recovered)")
        let after = try await Self.send(daemon, body, serverKey: serverKey)
        #expect(after.status == 200, "\(after.text)")
        if let json = after.text.split(separator: "\r\n\r\n").last, let id = try? messageID(ofSendResponse: String(json)) {
            accepted.append(id)
        }

        // Every accepted message is delivered.
        try await Self.expectDelivered(accepted, daemon, secret: device.secret)
        try await daemon.terminate()

        // A read-only data directory (a remount cannot happen under a daemon holding the file open for writing, so
        // it is read-only from the start): one line, a non-zero exit, nothing served.
        let readOnly = try Self.temporaryDirectory("ro")
        let script = #"set -e; mount -t tmpfs -o size=16m tmpfs "$0"; cp "$1/pushrelay.sqlite" "$0/"; "#
            + #"mount -o remount,ro "$0"; exec "$2" serve --listen 127.0.0.1:0 --data-dir "$0""#
        let readOnlyStart = try await run("timeout", [
            "30", "unshare", "-m", "--propagation", "private", "sh", "-c", script, readOnly, seed, Daemon.binary,
        ])
        #expect(readOnlyStart.status == 69, "\(readOnlyStart.status) \(readOnlyStart.stderr)")
        #expect(readOnlyStart.stderr.contains("cannot open the store: unavailable"), "\(readOnlyStart.stderr)")
        #expect(
            readOnlyStart.stderr.contains("is not writable: Read-only file system"),
            "\(readOnlyStart.stderr)")
    }

    /// A store that may be read but not written: a backup mounted read-only, or a data directory the operator may
    /// read but not write. The commands that only read (`project list`, `project service-account-keys`) open it
    /// read-only and answer (they refused it: "is not writable"); the commands that write still refuse with one
    /// line and 69. A store a daemon has open is read through its `-wal` and `-shm`, so what was committed since the
    /// last checkpoint is listed; a write-ahead log that cannot be read without writing (its `-shm` gone, the
    /// directory not writable) is refused with a reason, not skipped.
    @Test("read-only stores: listing commands read them (read-only mount, no write permission, a running daemon's WAL); writing commands refuse")
    func readOnlyStore() async throws {
        let dataDir = try Self.temporaryDirectory("readonly")
        let database = dataDir + "/pushrelay.sqlite"
        #expect(try await Daemon.cli(["project", "create", "shop", "--data-dir", dataDir]).status == 0)
        let account = try await Daemon.cli(["project", "service-account", "shop", "--data-dir", dataDir])
        #expect(account.status == 0, "\(account.stderr)")
        let keyID = try #require(try jsonObject(account.stdout)["private_key_id"] as? String)
        func asNobody(_ arguments: [String]) async throws -> ChildProcessResult {
            try await run("runuser", ["-u", "nobody", "--", Daemon.binary] + arguments + ["--data-dir", dataDir])
        }

        // A read-only mount of the closed store: $0 the directory, then the command line.
        let onReadOnlyMount = #"set -e; dir="$0"; mount --bind "$dir" "$dir"; mount -o remount,bind,ro "$dir"; exec "$@""#
        func onMount(_ arguments: [String]) async throws -> ChildProcessResult {
            try await run("unshare", [
                "-m", "--propagation", "private", "sh", "-c", onReadOnlyMount, dataDir, Daemon.binary,
            ] + arguments + ["--data-dir", dataDir])
        }
        let listed = try await onMount(["project", "list"])
        #expect(listed.status == 0 && listed.stdout.hasPrefix("shop\t"), "\(listed)")
        let keys = try await onMount(["project", "service-account-keys", "shop"])
        #expect(keys.status == 0 && keys.stdout.contains(keyID) && keys.stdout.contains("valid"), "\(keys)")
        let rotated = try await onMount(["project", "rotate-key", "shop"])
        #expect(rotated.status == 69, "\(rotated)")
        #expect(rotated.stderr.contains("is not writable: Read-only file system"), "\(rotated.stderr)")

        // No write permission (root writes anyway: another user): read, and nothing created beside the file.
        #expect(chmod(database, 0o444) == 0 && chmod(dataDir, 0o555) == 0)
        defer { _ = chmod(dataDir, 0o755) }
        let byNobody = try await asNobody(["project", "list"])
        #expect(byNobody.status == 0 && byNobody.stdout.hasPrefix("shop\t"), "\(byNobody)")
        let nobodyKeys = try await asNobody(["project", "service-account-keys", "shop", "--json"])
        #expect(nobodyKeys.status == 0 && nobodyKeys.stdout.contains(keyID), "\(nobodyKeys)")
        let refused = try await asNobody(["project", "create", "news"])
        #expect(refused.status == 69 && refused.stderr.contains("is not writable: Permission denied"), "\(refused)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dataDir) == ["pushrelay.sqlite"])

        // A daemon has the store open, and a project created since is still only in its write-ahead log: the
        // listing sees it (read through the -wal and the -shm, which the other user may read but not write).
        let daemon = try Daemon(dataDir: URL(fileURLWithPath: dataDir), arguments: ["--store", "sqlite"])
        try await daemon.start()
        #expect(try await Daemon.cli(["project", "create", "news", "--data-dir", dataDir]).status == 0)
        let fileAlone = try await run("python3", [
            "-c", "import sqlite3, sys; print([r[0] for r in sqlite3.connect(sys.argv[1], uri=True).execute('SELECT name FROM projects')])",
            "file:\(database)?immutable=1",
        ])
        #expect(fileAlone.status == 0 && !fileAlone.stdout.contains("news"), "news is in the database file already: \(fileAlone)")
        let whileServing = try await asNobody(["project", "list"])
        #expect(whileServing.status == 0, "\(whileServing)")
        #expect(whileServing.stdout.split(separator: "\n").map { $0.split(separator: "\t").first ?? "" } == ["news", "shop"], "\(whileServing)")

        // The daemon killed, its -shm removed: the write-ahead log holds `news` and cannot be read without writing
        // a new -shm in a directory this user may not write. Refused with the reason, not listed without it.
        try await daemon.kill9()
        try FileManager.default.removeItem(atPath: database + "-shm")
        let withoutIndex = try await asNobody(["project", "list"])
        #expect(withoutIndex.status == 69, "\(withoutIndex)")
        #expect(withoutIndex.stderr.contains("cannot open the store: cannot read \(database) without writing"), "\(withoutIndex.stderr)")
        #expect(withoutIndex.stderr.contains("-shm"), "\(withoutIndex.stderr)")
        #expect(withoutIndex.stdout.isEmpty, "\(withoutIndex.stdout)")
    }
}

extension StoreFaultTests {
    /// The CLI's listings open a PostgreSQL store read-only: `project list` of an empty database exits 69 saying what
    /// to run and creates no table (it created the whole schema), and lists once `store init` has made the store.
    @Test func postgresListingChangesNothing() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("listing")
        let store = ["--store", "postgres", "--postgres-url", url]
        let refused = try await Daemon.cli(["project", "list"] + store)
        #expect(refused.status == 69, "\(refused)")
        #expect(refused.stderr.contains("holds no PushRelay store yet"), "\(refused.stderr)")
        #expect(refused.stderr.contains("pushrelay store init --store postgres"), "\(refused.stderr)")
        let tables = try await postgres.psql(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()", database: database)
        #expect(tables.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(tables)")
        #expect(try await Daemon.cli(["store", "init"] + store).status == 0)
        #expect(try await Daemon.cli(["project", "create", "shop"] + store).status == 0)
        let listed = try await Daemon.cli(["project", "list"] + store)
        #expect(listed.status == 0 && listed.stdout.contains("shop"), "\(listed)")
    }
}
