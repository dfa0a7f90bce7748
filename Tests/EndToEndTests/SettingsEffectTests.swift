import Foundation
import TestSupport
import Testing

/// Settings that used to parse and do nothing, each tested by its effect on the real daemon and CLI, and the JSON
/// error format of the device and Instance ID routes (docs/openapi.yaml).
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct SettingsEffectTests {
    /// POSTs `body` with curl; returns status, content type and body.
    static func post(_ url: String, key: String, body: String) async throws -> (status: Int, type: String, body: String) {
        let result = try await run("curl", [
            "-sS", "-X", "POST", url, "-H", "Authorization: key=\(key)", "-H", "Content-Type: application/json",
            "--data-binary", "@-", "-w", "\n%{http_code} %{content_type}",
        ], stdin: body)
        var lines = result.stdout.components(separatedBy: "\n")
        let last = lines.removeLast().split(separator: " ", maxSplits: 1)
        return (Int(last.first ?? "") ?? 0, last.count > 1 ? String(last[1]) : "", lines.joined(separator: "\n"))
    }

    /// `max_request_body_size` sets the register limit (it was hard-coded to 16 KiB): with 64 KiB a 20 KB
    /// registration is accepted and a 70 KB one is refused with 413.
    @Test func maxRequestBodySizeAppliesToRegistration() async throws {
        let daemon = try Daemon(arguments: ["--max-request-body-size", "64KiB"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        func register(padding: Int) async throws -> (status: Int, type: String, body: String) {
            let body = #"{"project":"\#(keys.project)","app":"a","platform":"ios","pad":"\#(String(repeating: "x", count: padding))"}"#
            return try await Self.post("\(daemon.baseURL)/v1/register", key: keys.clientKey, body: body)
        }
        let accepted = try await register(padding: 20_000)
        #expect(accepted.status == 200, "\(accepted.body)")
        let refused = try await register(padding: 70_000)
        #expect(refused.status == 413, "\(refused.body)")
        // In the device API's JSON error format, like its other errors (it was plain text).
        #expect(refused.type.hasPrefix("application/json"), "\(refused.type)")
        #expect(refused.body.contains(#""error":"INVALID_ARGUMENT""#), "\(refused.body)")
        #expect(try await daemon.terminate() == 0)
    }

    /// The names of the daemon's threads (`/proc/<pid>/task/*/comm`).
    static func threadNames(of daemon: Daemon) throws -> [String] {
        let pid = try #require(daemon.process?.processIdentifier)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// `event_loops` sets how many threads serve the connections: with 1 and with 3 the daemon runs exactly that many
    /// event loops of its own (NIO names their threads `NIO-ELT-…`) and none of NIO's shared group, and sends over
    /// several connections are answered and delivered (on PostgreSQL, the store's connections run on those loops
    /// too). The default, 0, is NIO's shared group (`NIO-SGLTN-…`, one loop per core) and no group of its own.
    @Test(arguments: [1, 3, 0]) func eventLoopsSetsTheConnectionThreads(_ count: Int) async throws {
        let daemon = try Daemon(arguments: count == 0 ? [] : ["--event-loops", "\(count)"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let stream = try await daemon.openConnectedStream(secret: device.secret, timeout: .seconds(30))
        defer { stream.stop() }
        var ids: [String] = []
        for n in 0..<4 {  // a connection each (curl)
            let answer = try await daemon.send(
                #"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            #expect(answer.status == 200, "\(answer.body)")
            ids.append(try messageID(ofSendResponse: answer.body))
        }
        try await stream.waitFor(timeout: .seconds(30), "the four messages") { text in ids.allSatisfy(text.contains) }
        let names = try Self.threadNames(of: daemon)
        let own = names.filter { $0.hasPrefix("NIO-ELT-") }.count
        let shared = names.filter { $0.hasPrefix("NIO-SGLTN-") }.count
        if count == 0 {
            #expect(own == 0 && shared >= 1, "\(names)")
        } else {
            #expect(own == count && shared == 0, "\(names)")
        }
        #expect(try await daemon.terminate() == 0)
    }

    /// `commit_on_event_loop` (with `event_loops = 1`, SQLite only): the daemon runs no `store-writer` thread, its one
    /// event loop commits; sends are answered and delivered, and what was answered survives `kill -9` (committed
    /// before the answer, as with the writer thread). Without it, the same daemon runs the writer thread.
    @Test(arguments: [true, false]) func commitOnEventLoopRunsNoWriterThread(_ onLoop: Bool) async throws {
        let daemon = try Daemon(
            arguments: ["--store", "sqlite", "--event-loops", "1"] + (onLoop ? ["--commit-on-event-loop"] : []))
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        func send(_ n: Int) async throws -> String {
            let answer = try await daemon.send(
                #"{"to": "\#(device.token)", "data": {"n": "\#(n)"}}"#, serverKey: keys.serverKey)
            #expect(answer.status == 200, "\(answer.body)")
            return try messageID(ofSendResponse: answer.body)
        }
        let stream = try await daemon.openConnectedStream(secret: device.secret, timeout: .seconds(30))
        var delivered: [String] = []
        for n in 0..<4 { delivered.append(try await send(n)) }
        try await stream.waitFor(timeout: .seconds(30), "the four messages") { text in delivered.allSatisfy(text.contains) }
        stream.stop()
        let names = try Self.threadNames(of: daemon)
        #expect(names.contains("store-writer") == !onLoop, "\(names)")
        #expect(names.filter { $0.hasPrefix("NIO-ELT-") }.count == 1, "\(names)")

        var answered: [String] = []
        for n in 4..<8 { answered.append(try await send(n)) }
        try await daemon.kill9()
        try await daemon.start()
        let again = try daemon.openStream(secret: device.secret)
        defer { again.stop() }
        try await again.waitFor(timeout: .seconds(30), "the messages answered before kill -9") { text in
            answered.allSatisfy(text.contains)
        }
        #expect(try await daemon.terminate() == 0)
    }

    /// `max_buffered_body_size` bounds the send bodies that HTTP/2 clients with a valid server key can park on
    /// unfinished streams (windows are reopened only as the budget takes bytes): with 200 KiB, three connections
    /// of four never-ending 80 KiB sends get to send at most the budget plus a connection window each (960 KiB
    /// without it); resetting one connection's streams lets the others go on.
    @Test func maxBufferedBodySizeBoundsParkedBodies() async throws {
        let daemon = try Daemon(arguments: ["--max-buffered-body-size", "200KiB"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let sent = try await UnfinishedUploads.run(
            port: daemon.port, path: "/fcm/send", headers: [("authorization", "key=\(keys.serverKey)")],
            connections: 3, streams: 4, size: 80 * 1024, reset: true)
        #expect(sent.first <= 200 * 1024 + 4 * 65_535, "\(sent.first) bytes parked")
        #expect(sent.first >= 200 * 1024, "\(sent.first): the budget is usable")
        #expect(sent.more > 0, "bytes given back by the reset let the other connections go on")
        #expect(try await daemon.terminate() == 0)
    }

    /// Malformed JSON on `/v1/register`, `/v1/ack` and `/iid/v1:batchAdd` is answered in the routes' documented
    /// JSON error format (it was plain text).
    @Test func parseErrorsAreJSON() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let cases: [(path: String, key: String, bearer: Bool)] = [
            ("/v1/register", keys.clientKey, false), ("/v1/ack", device.secret, true),
            ("/iid/v1:batchAdd", keys.serverKey, false),
        ]
        for item in cases {
            for body in ["{not json", "[1, 2]"] {
                let result = try await run("curl", [
                    "-sS", "-X", "POST", "\(daemon.baseURL)\(item.path)",
                    "-H", item.bearer ? "Authorization: Bearer \(item.key)" : "Authorization: key=\(item.key)",
                    "-H", "Content-Type: application/json", "--data-binary", body,
                    "-w", "\n%{http_code} %{content_type}",
                ])
                var lines = result.stdout.components(separatedBy: "\n")
                let last = lines.removeLast()
                #expect(last.hasPrefix("400 application/json"), "\(item.path) \(body): \(last)")
                let json = try jsonObject(lines.joined(separator: "\n"))
                #expect(json["error"] as? String == "INVALID_ARGUMENT", "\(item.path): \(json)")
                #expect((json["message"] as? String)?.isEmpty == false)
            }
        }
        #expect(try await daemon.terminate() == 0)
    }

    /// `pushrelay project rotate-key` takes its grace period from `server_key_rotation_grace` (it used its own
    /// 24 h): with 1 s the previous key stops working within seconds while the new one works.
    @Test func rotateKeyHonoursTheConfiguredGrace() async throws {
        let daemon = try Daemon()
        let keys = try await daemon.createProject()
        let rotated = try await run(
            Daemon.binary, ["project", "rotate-key", keys.project, "--data-dir", daemon.dataDir.path, "--json"] + daemon.storeArguments,
            environment: ["PUSHRELAY_SERVER_KEY_ROTATION_GRACE": "1s"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let newKey = try #require(try jsonObject(rotated.stdout)["server_key"] as? String)
        try await daemon.start()
        let device = try await daemon.registerDevice(keys)
        let body = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        #expect(try await daemon.send(body, serverKey: newKey).status == 200)
        let oldKeyStatus = try await poll(every: .milliseconds(200), for: .seconds(30)) {
            try await daemon.send(body, serverKey: keys.serverKey).status
        } until: { $0 == 401 }
        #expect(oldKeyStatus == 401, "the previous key still worked 30 s after a rotation with a 1 s grace")
        #expect(try await daemon.terminate() == 0)
    }

    /// `auth_recheck_interval` bounds how long a server key the CLI cut off (`rotate-key --grace-seconds 0`, another
    /// process) keeps working: with 250 ms its sends are refused within seconds; with 1 h the daemon keeps answering
    /// it from memory (it does not re-read the credentials epoch), while the new key works at once (a key not in
    /// memory is always looked up in the store). SQLite in both passes of the suite: on PostgreSQL the CLI's commit
    /// notifies the daemon, which then forgets the key at once whatever the interval.
    @Test(arguments: ["250ms", "1h"]) func authRecheckIntervalBoundsWhenCLIChangesAreSeen(_ interval: String) async throws {
        let daemon = try Daemon(arguments: ["--store", "sqlite", "--auth-recheck-interval", interval])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let body = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        #expect(try await daemon.send(body, serverKey: keys.serverKey).status == 200)
        let rotated = try await run(
            Daemon.binary,
            ["project", "rotate-key", keys.project, "--grace-seconds", "0", "--data-dir", daemon.dataDir.path, "--json"]
                + daemon.storeArguments)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let newKey = try #require(try jsonObject(rotated.stdout)["server_key"] as? String)
        #expect(try await daemon.send(body, serverKey: newKey).status == 200)
        if interval == "1h" {
            // Six default intervals later the cut-off key is still answered from memory.
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await daemon.send(body, serverKey: keys.serverKey).status == 200)
        } else {
            let oldKeyStatus = try await poll(for: .seconds(30)) {
                try await daemon.send(body, serverKey: keys.serverKey).status
            } until: { $0 == 401 }
            #expect(oldKeyStatus == 401, "the cut-off key still worked 30 s later with a 250 ms recheck interval")
        }
        #expect(try await daemon.terminate() == 0)
    }

    /// `device_expiry` removes a device that neither streams nor acknowledges (sends to it then answer
    /// `NotRegistered`, as FCM's for a token unused for 270 days), while a device holding a stream the whole time
    /// stays and receives.
    @Test func deviceExpiryRemovesOnlyDevicesThatAreGone() async throws {
        let daemon = try Daemon(arguments: ["--device-expiry", "3s", "--purge-interval", "1s"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let quiet = try await daemon.registerDevice(keys)
        let streaming = try await daemon.registerDevice(keys)
        let stream = try await daemon.openConnectedStream(secret: streaming.secret)
        defer { stream.stop() }
        func result(_ device: DeviceKeys) async throws -> [String: Any] {
            let answer = try await daemon.send(#"{"to": "\#(device.token)", "data": {"k": "v"}}"#, serverKey: keys.serverKey)
            let results = try jsonObject(answer.body)["results"] as? [[String: Any]]
            return results?.first ?? [:]
        }
        let quietResult = try await poll(every: .milliseconds(500), for: .seconds(30)) {
            try await result(quiet)
        } until: { $0["error"] as? String == "NotRegistered" }
        #expect(quietResult["error"] as? String == "NotRegistered", "\(quietResult)")
        let kept = try await result(streaming)
        let id = try #require(kept["message_id"] as? String, "the streaming device was expired: \(kept)")
        try await stream.waitFor("the message on the kept device") { parseEvents($0).contains { $0.id == id } }
        #expect(try await daemon.terminate() == 0)
    }

    /// `max_devices_per_project` caps a project's registered devices: past it `POST /v1/register` answers
    /// `429 RESOURCE_EXHAUSTED` in the device API's JSON.
    @Test func maxDevicesPerProjectCapsRegistrations() async throws {
        let daemon = try Daemon(arguments: ["--max-devices-per-project", "1"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        _ = try await daemon.registerDevice(keys)
        let body = #"{"project":"\#(keys.project)","app":"a","platform":"ios"}"#
        let refused = try await Self.post("\(daemon.baseURL)/v1/register", key: keys.clientKey, body: body)
        #expect(refused.status == 429 && refused.type.hasPrefix("application/json"), "\(refused)")
        #expect(try jsonObject(refused.body)["error"] as? String == "RESOURCE_EXHAUSTED", "\(refused.body)")
        #expect(try await daemon.terminate() == 0)
    }

    /// `registration_rate` (per project) reaches the daemon: with 2 a minute the third registration of the project answers `429 RESOURCE_EXHAUSTED`
    /// with `Retry-After`.
    @Test func registrationRateLimitsAProject() async throws {
        let daemon = try Daemon(arguments: ["--registration-rate", "2"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let body = #"{"project":"\#(keys.project)","app":"a","platform":"ios"}"#
        for _ in 0..<2 {
            let accepted = try await Self.post("\(daemon.baseURL)/v1/register", key: keys.clientKey, body: body)
            #expect(accepted.status == 200, "\(accepted)")
        }
        let refused = try await run("curl", [
            "-sS", "-i", "-X", "POST", "\(daemon.baseURL)/v1/register", "-H", "Authorization: key=\(keys.clientKey)",
            "-H", "Content-Type: application/json", "--data-binary", body,
        ])
        #expect(refused.stdout.hasPrefix("HTTP/1.1 429"), "\(refused.stdout)")
        #expect(refused.stdout.lowercased().contains("retry-after: "), "\(refused.stdout)")
        #expect(try await daemon.terminate() == 0)
    }

    /// `project_message_rate` reaches the daemon: with 3 a minute a send to two devices, then another to two, gets
    /// `429 QuotaExceeded` with `Retry-After` for the second.
    @Test func projectMessageRateLimitsSends() async throws {
        let daemon = try Daemon(arguments: ["--project-message-rate", "3"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let devices = try await daemon.registerDevices(keys, count: 2)
        let body = #"{"registration_ids": ["\#(devices[0].token)", "\#(devices[1].token)"], "data": {"k": "v"}}"#
        #expect(try await daemon.send(body, serverKey: keys.serverKey).status == 200)
        let refused = try await run("curl", [
            "-sS", "-i", "-X", "POST", "\(daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(keys.serverKey)",
            "-H", "Content-Type: application/json", "--data-binary", body,
        ])
        #expect(refused.stdout.hasPrefix("HTTP/1.1 429"), "\(refused.stdout)")
        #expect(refused.stdout.lowercased().contains("retry-after: "), "\(refused.stdout)")
        #expect(refused.stdout.hasSuffix("QuotaExceeded"), "\(refused.stdout)")
        #expect(try await daemon.terminate() == 0)
    }

    /// `postgres_commit_timeout` and `postgres_statement_timeout` reach the PostgreSQL store's writer (they were
    /// fixed at 10 s and 30 s). Two nodes on one database, one with each at 1 s. While a `psql` session holds the
    /// device's row, a send through the node with the default commit timeout waits on it for more than 2 s; then a
    /// send through the node with 1 s is answered `Unavailable` while the first is still unanswered and the row still
    /// held (with 10 s on both nodes the first would give up first), and the first is stored once the row is let go.
    /// The same for a registration (an isolated write) waiting on the project's row and the statement timeout.
    @Test func postgresTimeoutsBoundWritesWaitingOnLocks() async throws {
        let postgres = try await TestPostgres.shared
        let (database, url) = try await postgres.namedFreshDatabase("timeouts")
        let store = ["--store", "postgres", "--postgres-url", url]
        let shortCommit = try Daemon(arguments: store + ["--postgres-commit-timeout", "1s"])
        let shortStatement = try Daemon(arguments: store + ["--postgres-statement-timeout", "1s"])
        try await shortCommit.start()
        try await shortStatement.start()
        let keys = try await shortCommit.createProject()
        let device = try await shortCommit.registerDevice(keys)
        let body = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        let registration = #"{"project":"\#(keys.project)","app":"a","platform":"ios"}"#

        /// Whether a backend of this database matches `condition`, polled for at most a minute.
        func waitFor(_ condition: String) async throws -> Bool {
            try await postgres.waitForActivity(database: database, condition)
        }
        /// A session that holds the rows `select` locks, open until `ROLLBACK`.
        func hold(_ select: String, name: String) async throws -> PSQLSession {
            let session = try postgres.session(database: database, name: name)
            try session.send("BEGIN; \(select) FOR UPDATE;")
            #expect(try await waitFor("application_name = '\(name)' AND state = 'idle in transaction'"))
            return session
        }
        /// Whether the session `name` still holds its transaction open.
        func stillHeld(_ name: String) async throws -> Bool {
            try await waitFor("application_name = '\(name)' AND state = 'idle in transaction'")
        }
        // The daemons' backends waiting on a lock now: a backend whose connection was dropped goes on waiting
        // (PostgreSQL notices the closed socket only once it has the lock).
        func waitingNow() async throws -> String {
            let pids = try await postgres.psql(
                """
                SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'pushrelay' AND wait_event_type = 'Lock'
                """, database: database)
            return pids.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // Another daemon backend than `before`'s that has waited on a lock for more than 2 s (1 s timeouts would
        // have given up by then).
        func waitingLong(besides before: String) -> String {
            "application_name = 'pushrelay' AND wait_event_type = 'Lock' AND now() - query_start > interval '2 seconds'"
                + " AND pid <> ALL (ARRAY[\(before)]::int[])"
        }

        // A group of sends waiting on the device's row: the commit timeout.
        var held = try await hold("SELECT id FROM devices WHERE token = '\(device.token)'", name: "held_device")
        var before = try await waitingNow()
        let sendAnswered = AnsweredFlag()
        let waiting = Task {
            defer { sendAnswered.set() }
            return try await shortStatement.send(body, serverKey: keys.serverKey)
        }
        #expect(try await waitFor(waitingLong(besides: before)), "the default commit timeout's send did not wait on the row")
        let refused = try await shortCommit.send(body, serverKey: keys.serverKey)
        #expect(refused.status == 503 && refused.body.contains("Unavailable"), "\(refused)")
        #expect(!sendAnswered.isSet, "the send that waited longer, under the default commit timeout, was answered first")
        #expect(try await stillHeld("held_device"), "answered only after the row was let go")
        try held.send("ROLLBACK;")
        _ = await held.finish()
        let stored = try await waiting.value
        #expect(stored.status == 200 && stored.body.contains(#""success":1"#), "\(stored)")

        // A registration waiting on the project's row (its device count): the statement timeout.
        held = try await hold("SELECT id FROM projects WHERE name = '\(keys.project)'", name: "held_project")
        before = try await waitingNow()
        let registrationAnswered = AnsweredFlag()
        let registering = Task {
            defer { registrationAnswered.set() }
            return try await Self.post("\(shortCommit.baseURL)/v1/register", key: keys.clientKey, body: registration)
        }
        #expect(
            try await waitFor(waitingLong(besides: before)),
            "the default statement timeout's registration did not wait on the row")
        let unregistered = try await Self.post(
            "\(shortStatement.baseURL)/v1/register", key: keys.clientKey, body: registration)
        #expect(unregistered.status == 503 && unregistered.body.contains("UNAVAILABLE"), "\(unregistered)")
        #expect(
            !registrationAnswered.isSet,
            "the registration that waited longer, under the default statement timeout, was answered first")
        #expect(try await stillHeld("held_project"), "answered only after the row was let go")
        try held.send("ROLLBACK;")
        _ = await held.finish()
        let registered = try await registering.value
        #expect(registered.status == 200, "\(registered)")

        #expect(try await shortCommit.terminate() == 0)
        #expect(try await shortStatement.terminate() == 0)
    }
}

/// Whether a request running in the background has been answered, for a test that checks that another one was
/// answered first.
final class AnsweredFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var answered = false

    var isSet: Bool { lock.withLock { answered } }

    func set() { lock.withLock { answered = true } }
}
