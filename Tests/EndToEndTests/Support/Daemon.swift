import Foundation
import TestSupport
import Testing

/// The real `pushrelay` binary, started as a child process on loopback for end-to-end tests.
///
/// The binary is `$PUSHRELAY_BIN`, or `.build/debug/pushrelay` of this checkout.
final class Daemon: @unchecked Sendable {
    let dataDir: URL
    private(set) var process: Process?
    private(set) var port: Int = 0
    /// The port of the first `--listen-tls` listener, when the arguments name one.
    private(set) var tlsPort: Int = 0
    private let extraArguments: [String]
    private let environment: [String: String]
    private let launcher: [String]
    private let output = OutputCollector()

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The PostgreSQL database this daemon runs on when the suite runs on PostgreSQL (``E2EStore``) and the test
    /// did not name a store; chosen at the first `start()`.
    private var suiteDatabase: (name: String, url: String)?

    /// The `--store` and `--postgres-url` arguments the daemon runs with, for CLI calls on the same store.
    var storeArguments: [String] {
        var found: [String] = []
        for (index, argument) in extraArguments.enumerated()
        where (argument == "--store" || argument == "--postgres-url") && index + 1 < extraArguments.count {
            found += [argument, extraArguments[index + 1]]
        }
        if let suiteDatabase { found += ["--store", "postgres", "--postgres-url", suiteDatabase.url] }
        return found
    }

    /// Chooses the daemon's store before its first use (`start()` and `createProject` call it): on a PostgreSQL
    /// run, a database named after the data directory, so a daemon started again on the same directory finds its
    /// data.
    func prepareStore() async throws {
        guard suiteDatabase == nil, E2EStore.current == .postgres, !extraArguments.contains("--store") else { return }
        let name = "e2e_" + dataDir.lastPathComponent.lowercased().filter { $0.isLetter || $0.isNumber }.suffix(40)
        suiteDatabase = (name, try await TestPostgres.shared.database(named: name))
    }

    /// Everything the store holds, as bytes: SQLite's database file, or `pg_dump` of the PostgreSQL database.
    func storeContents() async throws -> Data {
        if let suiteDatabase { return Data(try await TestPostgres.shared.dump(database: suiteDatabase.name).utf8) }
        return try Data(contentsOf: dataDir.appendingPathComponent("pushrelay.sqlite"))
    }

    /// Runs one SQL query on the daemon's store (SQLite's file read-only, or its PostgreSQL database) and returns
    /// the answer's text, one row per line, columns separated by `|`.
    func query(_ sql: String) async throws -> String {
        let result: ChildProcessResult
        if let suiteDatabase {
            result = try await TestPostgres.shared.psql(sql, database: suiteDatabase.name)
        } else {
            guard !extraArguments.contains("--store") else {
                throw DaemonError(message: "query(_:) knows the suite's stores, not one a test named")
            }
            result = try await run("sqlite3", ["-readonly", dataDir.appendingPathComponent("pushrelay.sqlite").path, sql])
        }
        guard result.status == 0 else { throw DaemonError(message: "query failed: \(result.combined)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["PUSHRELAY_BIN"], !path.isEmpty { return path }
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent(".build/debug/pushrelay").path
    }

    /// Makes a fresh data directory; `start()` launches the daemon on it (`serve --init`: the store is created).
    /// `environment` is added to the test's own for the daemon (e.g. `NOTIFY_SOCKET`); `launcher`, when given, is
    /// a command that runs the daemon's command line it is handed (e.g. in a private mount namespace).
    init(
        dataDir: URL? = nil, arguments: [String] = [], environment: [String: String] = [:], launcher: [String] = []
    ) throws {
        if let dataDir {
            self.dataDir = dataDir
        } else {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            self.dataDir = dir
        }
        self.extraArguments = arguments
        self.environment = environment
        self.launcher = launcher
    }

    deinit {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Starts the daemon and waits for its `listening on` line. Reuses the previous port on a restart.
    func start(timeout: Duration = .seconds(30)) async throws {
        try await prepareStore()
        let process = Process()
        let listen = "127.0.0.1:\(port)"
        // Tests register hundreds of devices from 127.0.0.1 in seconds: the registration quotas are off unless the
        // test sets them (HostileInputTests' registration flood does).
        let quotas = ["--registration-rate", "--registration-rate-per-address"].filter { !extraArguments.contains($0) }
            .flatMap { [$0, "0"] }
        let command =
            [Self.binary, "serve", "--init", "--listen", listen, "--data-dir", dataDir.path] + quotas + extraArguments
            + (suiteDatabase.map { ["--store", "postgres", "--postgres-url", $0.url] } ?? [])
        let line = launcher + command
        ChildProcess.configure(process, line[0], Array(line.dropFirst()))
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        output.attach(pipe)
        try process.run()
        self.process = process
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let found = output.listeningPort() {
                let tls = extraArguments.contains("--listen-tls") ? output.listeningPort(scheme: "https") : 0
                if let tls {
                    port = found
                    tlsPort = tls
                    return
                }
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw DaemonError(message: "daemon did not start: \(output.text)")
    }

    /// Runs `pushrelay` with arguments (a CLI call against this daemon's data dir or URL) and returns stdout.
    static func cli(_ arguments: [String], stdin: String? = nil) async throws -> ChildProcessResult {
        try await run(binary, arguments, stdin: stdin)
    }

    /// SIGKILL: no chance to flush or clean up.
    func kill9() async throws {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        await ChildProcess.waitForExit(process)
        output.reset()
    }

    /// SIGTERM and wait for the exit status.
    @discardableResult
    func terminate() async throws -> Int32 {
        guard let process else { return 0 }
        process.terminate()
        await ChildProcess.waitForExit(process)
        output.reset()
        return process.terminationStatus
    }

    /// Sends SIGTERM without waiting (the daemon drains meanwhile); `waitForExit()` reaps it.
    func sendTerminate() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
    }

    /// Waits for the daemon to exit, at most `timeout`, and returns its status and its output; `nil` if it is
    /// still running (it is then killed).
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> (status: Int32, log: String)? {
        guard let process else { return nil }
        if await !ChildProcess.waitForExit(process, timeout: timeout) {
            kill(process.processIdentifier, SIGKILL)
            await ChildProcess.waitForExit(process)
            return nil
        }
        let log = output.text
        output.reset()
        return (process.terminationStatus, log)
    }

    var log: String { output.text }
}

/// The store the end-to-end suite runs its daemons on: SQLite, or PostgreSQL when `PUSHRELAY_E2E_STORE=postgres`
/// (`scripts/test.sh` runs the suite once on each). A test that passes `--store` itself keeps its store.
enum E2EStore: String {
    case sqlite
    case postgres

    static let current: E2EStore = {
        guard let value = ProcessInfo.processInfo.environment["PUSHRELAY_E2E_STORE"], !value.isEmpty else { return .sqlite }
        guard let store = E2EStore(rawValue: value) else { fatalError("PUSHRELAY_E2E_STORE must be sqlite or postgres, not \(value)") }
        return store
    }()
}

struct DaemonError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Runs a program to completion and returns its exit status and output, without blocking a pool thread.
func run(_ program: String, _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:])
    async throws -> ChildProcessResult
{
    try await ChildProcess.run(program, arguments, standardInput: stdin, environment: environment)
}

/// Collects a child's output on a background reader so the pipe never fills.
///
/// Each pipe is read by a thread of its own with blocking `read(2)` until end of file, not by
/// `FileHandle.readabilityHandler`: that installs a libdispatch read source whose asynchronous cancellation races
/// the descriptor's close, and on Linux the race intermittently crashes the whole test process in
/// `_dispatch_event_loop_drain` (a dangling epoll registration; swift-corelibs-foundation#3276 and #5507). A
/// blocking read never registers the descriptor with libdispatch. The thread holds the read end until the child and
/// every copy of the write end are gone (`Process.run` closes the parent's copy), then ends.
final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = ""

    func attach(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        let reader = Thread { [weak self] in
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0, let self else { break }
                let text = String(decoding: chunk[..<count], as: UTF8.self)
                self.lock.withLock { self.buffer += text }
            }
            withExtendedLifetime(handle) {}
        }
        reader.name = "test-output"
        reader.start()
    }

    var text: String { lock.withLock { buffer } }

    func reset() { lock.withLock { buffer = "" } }

    func listeningPort(scheme: String = "http") -> Int? {
        let text = self.text
        guard let range = text.range(of: "listening on \(scheme)://127.0.0.1:") else { return nil }
        let digits = text[range.upperBound...].prefix { $0.isNumber }
        return Int(digits)
    }
}
