import Foundation

/// A throwaway PostgreSQL cluster for tests: Debian's server binaries (`scripts/setup.sh --test` installs
/// `postgresql`), a temporary data directory, a Unix socket in it and a free loopback port. `initdb` refuses to run as
/// root, so as root the cluster runs as the `postgres` user the package creates.
///
/// ``shared`` is started once per test process, at its first use, and stopped by a watcher process when the test
/// process exits (however it exits); each test takes its own database in it (``database(named:)``). A test that
/// stops PostgreSQL on purpose starts a cluster of its own (``start()``). A missing PostgreSQL fails the test: it
/// never skips.
public final class TestPostgres: Sendable {
    /// The data directory's parent (socket, log, data).
    public let directory: String
    /// The loopback TCP port.
    public let port: Int
    private let binaries: String

    /// The cluster shared by this test process.
    public static var shared: TestPostgres {
        get async throws { try await SharedCluster.instance.cluster() }
    }

    private init(directory: String, port: Int, binaries: String) {
        self.directory = directory
        self.port = port
        self.binaries = binaries
    }

    /// A URL for `database` in this cluster, over TCP on loopback.
    public func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(self.port)/\(database)"
    }

    /// Creates the database `name` (once per cluster) and returns its URL.
    public func database(named name: String) async throws -> String {
        let result = try await self.psql("CREATE DATABASE \"\(name)\"")
        guard result.status == 0 || result.stderr.contains("already exists") else {
            throw TestPostgresError("CREATE DATABASE \(name) failed: \(result.combined)")
        }
        return self.url(database: name)
    }

    /// A fresh database with a random name.
    public func freshDatabase(_ prefix: String = "t") async throws -> String {
        try await self.namedFreshDatabase(prefix).url
    }

    /// A fresh database with a random name, and that name (for ``psql(_:database:)`` and
    /// ``waitForActivity(database:_:)``).
    public func namedFreshDatabase(_ prefix: String) async throws -> (name: String, url: String) {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        return (name, try await self.database(named: name))
    }

    /// Runs SQL through `psql` as the superuser (database `postgres` unless given).
    /// Polls `pg_stat_activity` until a backend of `database` matches `condition` (an SQL condition on its
    /// columns), at most a minute; false if none did. Other suites use other databases of the shared cluster.
    public func waitForActivity(database: String, _ condition: String) async throws -> Bool {
        for _ in 0..<3_000 {
            let found = try await self.psql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND \(condition)",
                database: database)
            if found.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "0" { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    public func psql(_ sql: String, database: String = "postgres") async throws -> ChildProcessResult {
        try await ChildProcess.run(
            self.binaries + "/psql",
            ["-h", self.directory, "-p", "\(self.port)", "-U", "postgres", "-d", database, "-X", "-q", "-A", "-t",
             "-v", "ON_ERROR_STOP=1", "-c", sql],
            timeout: .seconds(120)
        )
    }

    /// A `psql` session that runs what ``PSQLSession/send(_:)`` writes to it as it comes, so that a test can hold a
    /// transaction open across its other steps (`BEGIN; INSERT …` now, `COMMIT` later). Its
    /// `application_name` is `name`, for `pg_stat_activity`.
    public func session(database: String, name: String) throws -> PSQLSession {
        let process = Process()
        ChildProcess.configure(process, self.binaries + "/psql", [
            "-h", self.directory, "-p", "\(self.port)", "-U", "postgres", "-d", database, "-X", "-q",
            "-v", "ON_ERROR_STOP=1",
        ])
        process.environment = ProcessInfo.processInfo.environment.merging(["PGAPPNAME": name]) { $1 }
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return PSQLSession(process: process, input: input.fileHandleForWriting)
    }

    /// The whole database as `pg_dump` writes it (schema and rows, as text).
    public func dump(database: String) async throws -> String {
        let result = try await ChildProcess.run(
            self.binaries + "/pg_dump",
            ["-h", self.directory, "-p", "\(self.port)", "-U", "postgres", "-d", database], timeout: .seconds(120))
        guard result.status == 0 else { throw TestPostgresError("pg_dump failed: \(result.stderr)") }
        return result.stdout
    }

    /// Starts a new cluster (initdb, then the server), stopped when this test process exits or by ``stop()``.
    public static func start() async throws -> TestPostgres {
        let binaries = try Self.binaries()
        let directory = try makeTemporaryDirectory("pushrelay-pg")
        let asRoot = geteuid() == 0
        if asRoot {
            try await Self.check(ChildProcess.run("chown", ["postgres:postgres", directory]), "chown")
        }
        try await Self.check(
            Self.run(asRoot, binaries + "/initdb",
                     ["-D", directory + "/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"]),
            "initdb")
        var lastFailure = ""
        for _ in 0..<5 {
            let port = try Self.freePort()
            let cluster = TestPostgres(directory: directory, port: port, binaries: binaries)
            let started = try await cluster.startServer(asRoot: asRoot)
            if started.status == 0 {
                cluster.stopWhenThisProcessExits(asRoot: asRoot)
                return cluster
            }
            lastFailure = started.combined + ChildProcess.readText(directory + "/log")
        }
        throw TestPostgresError("cannot start PostgreSQL: \(lastFailure)")
    }

    /// Stops the server (fast shutdown: sessions end, what was committed is on disk).
    public func stop() async throws {
        try await Self.check(
            Self.run(geteuid() == 0, self.binaries + "/pg_ctl", ["-D", self.directory + "/data", "-m", "fast", "-w", "stop"]),
            "pg_ctl stop")
    }

    /// Starts the server again after ``stop()``, on the same port.
    public func restart() async throws {
        try await Self.check(self.startServer(asRoot: geteuid() == 0), "pg_ctl start")
    }

    private func startServer(asRoot: Bool) async throws -> ChildProcessResult {
        let options = [
            "-c listen_addresses=127.0.0.1", "-p \(self.port)", "-c unix_socket_directories=\(self.directory)",
            "-c max_connections=400", "-c fsync=off", "-c full_page_writes=off", "-c synchronous_commit=on",
        ].joined(separator: " ")
        // The server must not inherit the test process's descriptors: Foundation learns that a child exited when
        // every copy of a socket it gave the child is closed, and a postmaster holding one would hang the test.
        let closeDescriptors = "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])"
        return try await Self.run(
            asRoot, "/usr/bin/python3",
            ["-c", closeDescriptors, self.binaries + "/pg_ctl",
             "-D", self.directory + "/data", "-l", self.directory + "/log", "-w", "-t", "120", "-o", options, "start"])
    }

    /// A detached shell that waits for this process to end, then stops the cluster and removes its directory.
    private func stopWhenThisProcessExits(asRoot: Bool) {
        let stop = (asRoot ? "runuser -u postgres -- " : "") + "\(self.binaries)/pg_ctl -D \(self.directory)/data -m immediate stop"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(self.directory)"
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        watcher.arguments = ["/bin/sh", "-c", script]
        watcher.standardInput = FileHandle.nullDevice
        watcher.standardOutput = FileHandle.nullDevice
        watcher.standardError = FileHandle.nullDevice
        try? watcher.run()
    }

    private static func run(_ asRoot: Bool, _ program: String, _ arguments: [String]) async throws -> ChildProcessResult {
        if asRoot {
            return try await ChildProcess.run("runuser", ["-u", "postgres", "--", program] + arguments, timeout: .seconds(180))
        }
        return try await ChildProcess.run(program, arguments, timeout: .seconds(180))
    }

    private static func check(_ result: ChildProcessResult, _ what: String) throws {
        guard result.status == 0 else { throw TestPostgresError("\(what) failed: \(result.combined)") }
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` with a server.
    private static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/postgres") {
            return "\(root)/\(version)/bin"
        }
        throw TestPostgresError("PostgreSQL server not found in \(root): run scripts/setup.sh --test (Debian's postgresql)")
    }

    /// A loopback port nobody listens on now.
    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestPostgresError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestPostgresError("bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why a test cluster could not be used.
public struct TestPostgresError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Starts the shared cluster once, whoever asks first.
private actor SharedCluster {
    static let instance = SharedCluster()
    private var starting: Task<TestPostgres, any Error>?

    func cluster() async throws -> TestPostgres {
        if let starting { return try await starting.value }
        let task = Task { try await TestPostgres.start() }
        self.starting = task
        return try await task.value
    }
}

/// A running `psql` fed through its standard input (``TestPostgres/session(database:name:)``).
public final class PSQLSession: @unchecked Sendable {
    private let process: Process
    private let input: FileHandle

    init(process: Process, input: FileHandle) {
        self.process = process
        self.input = input
    }

    /// Writes `sql` and a newline to the session; psql runs each complete statement as it reads it.
    public func send(_ sql: String) throws {
        try self.input.write(contentsOf: Data((sql + "\n").utf8))
    }

    /// Closes the input and waits for psql to exit; its exit status (3 after a failed statement).
    public func finish() async -> Int32 {
        try? self.input.close()
        guard await ChildProcess.waitForExit(self.process) else {
            self.process.terminate()
            return -1
        }
        return self.process.terminationStatus
    }
}
