public import Foundation
import Subprocess
import SystemPackage

/// What a finished child process left behind.
public struct ChildProcessResult: Sendable {
    /// The exit status, or the signal number when ``terminatedBySignal``.
    public var status: Int32
    /// Whether the child ended by a signal (a timeout's SIGTERM/SIGKILL, a crash).
    public var terminatedBySignal: Bool
    public var stdout: String
    public var stderr: String
    /// Both outputs, standard output first.
    public var combined: String { stdout + "\n" + stderr }
}

/// Runs the independent programs that tests talk to (curl, nghttp, openssl, python3, the `pushrelay` binary).
///
/// The one rule it exists for: **a test never blocks a thread of Swift's cooperative pool while a child runs.**
/// The pool has one thread per core (two on CI); a test that sat in `waitUntilExit()` for the 18 s of a package
/// build starved every other test in the process, and a watchdog test timed out waiting for pings its service
/// could not send. Here the wait is a continuation resumed by the process's termination handler.
///
/// ``run(_:_:standardInput:environment:workingDirectory:timeout:)`` is swift-subprocess's `run` with a timeout. The
/// long-lived children that tests keep as `Process` (the daemon, `curl -N`) start through a tiny exec wrapper that
/// clears the signal mask first (``configure(_:_:_:)``): a child inherits the mask of the thread that spawns it, and
/// the test runner's threads block most signals, so a daemon spawned from one would otherwise ignore SIGTERM.
public enum ChildProcess {
    /// Runs `program` (a path, or a name looked up in `PATH`) to completion, with swift-subprocess: its wait for the
    /// child's exit does not hold a thread of the pool, and the child starts with no signal blocked.
    ///
    /// - Parameters:
    ///   - standardInput: written to the child's standard input, which is then closed (empty without it).
    ///   - environment: added to the test's own environment.
    ///   - timeout: the child is sent SIGTERM after this long, SIGKILL 5 s later; the result then says
    ///     ``ChildProcessResult/terminatedBySignal``.
    public static func run(
        _ program: String,
        _ arguments: [String],
        standardInput: String? = nil,
        environment: [String: String] = [:],
        workingDirectory: String? = nil,
        timeout: Duration = .seconds(180)
    ) async throws -> ChildProcessResult {
        let overrides = Dictionary(
            uniqueKeysWithValues: environment.map { (Environment.Key(stringLiteral: $0.key), Optional($0.value)) })
        let outputLimit = 256 << 20
        // In a task of its own: a caller's cancellation (a probe stopping) lets the child finish, as a test expects
        // of a command it started, instead of swift-subprocess tearing it down.
        let result = try await Task {
            try await Subprocess.run(
                program.contains("/") ? .path(FilePath(program)) : .name(program),
                arguments: Arguments(arguments),
                environment: overrides.isEmpty ? .inherit : .inherit.updating(overrides),
                workingDirectory: workingDirectory.map { FilePath($0) },
                input: .string(standardInput ?? ""),
                output: .string(limit: outputLimit),
                error: .string(limit: outputLimit)
            ) { execution in
                // The body returns at once; `run` then waits for the exit. The timeout outlives it, by the pid.
                let pid = execution.processIdentifier.value
                return Task {
                    try await Task.sleep(for: timeout)
                    kill(pid, SIGTERM)
                    try await Task.sleep(for: .seconds(5))
                    kill(pid, SIGKILL)
                }
            }
        }.value
        result.closureResult.cancel()
        let (status, signaled): (Int32, Bool) =
            switch result.terminationStatus {
            case .exited(let code): (code, false)
            case .signaled(let number): (number, true)
            }
        return ChildProcessResult(
            status: status,
            terminatedBySignal: signaled,
            stdout: result.standardOutput,
            stderr: result.standardError
        )
    }

    /// Starts a configured `process` and suspends until it has exited (SIGTERM after `timeout`, SIGKILL 5 s later).
    public static func runToExit(_ process: Process, timeout: Duration = .seconds(180)) async throws {
        let exit = ExitSignal()
        process.terminationHandler = { _ in exit.fire() }
        try process.run()
        let pid = process.processIdentifier
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGTERM)
            try await Task.sleep(for: .seconds(5))
            kill(pid, SIGKILL)
        }
        await exit.wait()
        watchdog.cancel()
    }

    /// Suspends until a running `process` has exited, polling without blocking a thread; `false` if it still runs
    /// after `timeout`.
    @discardableResult
    public static func waitForExit(_ process: Process, timeout: Duration = .seconds(60)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while process.isRunning {
            if clock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Reaped already (isRunning is false once the handler ran); this returns at once and syncs the status.
        process.waitUntilExit()
        return true
    }

    /// Sets `process` up to run `program` with every signal unblocked (see the type's documentation).
    public static func configure(_ process: Process, _ program: String, _ arguments: [String]) {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c",
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])",
            program,
        ] + arguments
    }

    /// Whether `name` is an executable file in `PATH` (no child process needed).
    public static func available(_ name: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
        }
    }

    /// A file's text, read with plain POSIX calls (Foundation's readers show up as leaks under AddressSanitizer).
    public static func readText(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A fresh directory under the temporary directory, named `<prefix>-<uuid>`.
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/\(prefix)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A one-shot signal from a termination handler (any thread) to one waiting task.
private final class ExitSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var waiter: CheckedContinuation<Void, Never>?

    func fire() {
        let waiter: CheckedContinuation<Void, Never>? = lock.withLock {
            fired = true
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow: Bool = lock.withLock {
                if fired { return true }
                waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
