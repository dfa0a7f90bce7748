import ArgumentParser
import Foundation
import HTTPTypes
import PushRelayCore
import PushRelayWire

/// `pushrelay send`: posts an FCM legacy message to `/fcm/send`, or with `--v1` an FCM HTTP v1 message to
/// `messages:send` (after the service account's token exchange at `/token`), built from flags or given raw, and
/// prints the relay's answer.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a push message through the FCM legacy API (or HTTP v1 with --v1) and print the answer.",
        discussion: """
            Either build the message from flags (--to and at least one of --title, --body, --order-info, --data) \
            or post a raw JSON body with --json FILE (--json - reads standard input). The answer's \
            body goes to standard output as the relay sent it.

            Legacy: --server and --server-key. HTTP v1: --v1 --service-account FILE (a file from `pushrelay \
            project service-account`): the command signs a JWT with the file's key, exchanges it at the file's \
            token_uri for an access token, and posts to /v1/projects/<project_id>/messages:send (on --server, \
            default: the token_uri's host). With --v1, --order-info goes into data.orderInfo as JSON text.

            Exit status: 0 when the relay answered 2xx and no result failed; 1 when it answered HTTP 400 or \
            above (e.g. 400 malformed, 401 wrong key, 503 Unavailable), when `failure` is greater than 0 \
            (e.g. NotRegistered), or when a topic send answers {"error": ...} (e.g. InvalidDataKey); 64 (a usage error) when the flags are wrong; 1 when the \
            relay cannot be reached.
            """
    )

    @Option(help: "The relay's base URL, e.g. http://127.0.0.1:8080 (h2c) or https://push.example.com.")
    var server: String?

    @Option(name: .customLong("server-key"), help: "The project's server key (sent as Authorization: key=…).")
    var serverKey: String?

    @Flag(help: "Send through FCM HTTP v1 with --service-account.")
    var v1 = false

    @Option(name: .customLong("service-account"), help: "The service-account file (with --v1).")
    var serviceAccount: String?

    @Option(name: .customLong("json"), help: "Post this file's FCM JSON body as is ('-' for standard input).")
    var jsonFile: String?

    @Option(help: "The registration token, /topics/NAME, or a device group's notification key to send to.")
    var to: String?

    @Option(help: "notification.title")
    var title: String?

    @Option(help: "notification.body")
    var body: String?

    @Option(name: .customLong("order-info"), help: "A JSON object or value put into notification.orderInfo.")
    var orderInfo: String?

    @Option(name: .customLong("data"), help: "A data key=value pair (repeatable).")
    var data: [String] = []

    @Option(name: .customLong("collapse-key"), help: "collapse_key")
    var collapseKey: String?

    @Option(help: "time_to_live in seconds (0…2419200).")
    var ttl: Int?

    @Option(help: "priority: high or normal.")
    var priority: String?

    @Flag(name: .customLong("content-available"), help: "content_available: true")
    var contentAvailable = false

    @Flag(name: .customLong("dry-run"), help: "dry_run: true (validated, not delivered)")
    var dryRun = false

    @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file (https).")
    var caFile: String?

    func validate() throws {
        if v1 {
            guard serviceAccount != nil else { throw ValidationError("--v1 needs --service-account FILE") }
            if serverKey != nil { throw ValidationError("--server-key is for the legacy API; --v1 uses the service account") }
        } else {
            guard server != nil, serverKey != nil else {
                throw ValidationError("give --server and --server-key (or --v1 --service-account FILE)")
            }
        }
        if let server { try RelayHTTPCall.validate(server: server) }
        let built = to != nil || title != nil || body != nil || orderInfo != nil || !data.isEmpty
            || collapseKey != nil || ttl != nil || priority != nil || contentAvailable || dryRun
        if jsonFile != nil {
            if built { throw ValidationError("--json posts a raw body; it excludes the message flags") }
            return
        }
        guard to != nil else { throw ValidationError("give --to TOKEN (or --json FILE)") }
        guard title != nil || body != nil || orderInfo != nil || !data.isEmpty else {
            throw ValidationError("give the message: at least one of --title, --body, --order-info, --data (or --json FILE)")
        }
        if let orderInfo {
            do { _ = try JSONValue.parse(orderInfo) } catch {
                throw ValidationError("--order-info is not JSON: \(error)")
            }
        }
        for pair in data where !pair.contains("=") {
            throw ValidationError("--data takes key=value, not '\(pair)'")
        }
    }

    func run() async throws {
        let payload: [UInt8]
        if let jsonFile {
            let contents = jsonFile == "-"
                ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: jsonFile))
            payload = Array(contents)
        } else {
            payload = try (v1 ? buildV1Body() : buildBody()).serialized()
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        let server: String
        let path: String
        if v1, let serviceAccount {
            let account = try V1ServiceAccountSession(file: serviceAccount, caFile: caFile)
            server = self.server ?? account.file.baseURL
            fields[.authorization] = "Bearer \(try await account.accessToken())"
            path = "/v1/projects/\(account.file.projectID)/messages:send"
        } else {
            server = self.server ?? ""
            fields[.authorization] = "key=\(serverKey ?? "")"
            path = "/fcm/send"
        }
        try RelayHTTPCall.validate(server: server)
        let call = RelayHTTPCall(server: URL(string: server)!, caFile: caFile)
        let answer: RelayHTTPCall.Answer
        do {
            answer = try await call.perform(.post, path: path, headerFields: fields, body: payload)
        } catch {
            printToStandardError("pushrelay: cannot reach \(server): \(error)")
            throw ExitCode(1)
        }
        print(answer.body.hasSuffix("\n") ? String(answer.body.dropLast()) : answer.body)
        if answer.status >= 400 {
            var line = "pushrelay: HTTP \(answer.status)"
            if let retryAfter = answer.headerFields[.retryAfter] { line += " (Retry-After: \(retryAfter))" }
            printToStandardError(line)
            throw ExitCode(1)
        }
        let parsed = try? JSONValue.parse(answer.body)
        if let failures = parsed?["failure"]?.int64Value, failures > 0 {
            printToStandardError("pushrelay: \(failures) recipient(s) failed")
            throw ExitCode(1)
        }
        // A topic or condition send reports a message-wide refusal as `200 {"error": "<code>"}` (FCM's shape): nothing
        // was queued.
        if let error = parsed?["error"]?.stringValue {
            printToStandardError("pushrelay: the relay refused the message: \(error)")
            throw ExitCode(1)
        }
    }

    /// The FCM HTTP v1 body from the flags: `{"message": {...}, "validate_only": …}`.
    func buildV1Body() throws -> JSONValue {
        var message = JSONObject()
        if let to {
            if to.hasPrefix("/topics/") { message["topic"] = .string(String(to.dropFirst(8))) } else { message["token"] = .string(to) }
        }
        var notification = JSONObject()
        notification["title"] = title.map { .string($0) }
        notification["body"] = body.map { .string($0) }
        if !notification.isEmpty { message["notification"] = .object(notification) }
        var values = JSONObject()
        if let orderInfo { values["orderInfo"] = .string(try JSONValue.parse(orderInfo).serializedString()) }
        for pair in data {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            values[String(parts[0])] = .string(parts.count > 1 ? String(parts[1]) : "")
        }
        if !values.isEmpty { message["data"] = .object(values) }
        var android = JSONObject()
        android["collapse_key"] = collapseKey.map { .string($0) }
        android["ttl"] = ttl.map { .string("\($0)s") }
        android["priority"] = priority.map { .string($0.uppercased()) }
        if !android.isEmpty { message["android"] = .object(android) }
        if contentAvailable { message["apns"] = ["payload": ["aps": ["content-available": 1]]] }
        var object = JSONObject()
        object["message"] = .object(message)
        if dryRun { object["validate_only"] = .bool(true) }
        return .object(object)
    }

    /// The FCM legacy body from the flags, keys in FCM's usual order.
    func buildBody() throws -> JSONValue {
        var object = JSONObject()
        object["to"] = to.map { .string($0) }
        var notification = JSONObject()
        notification["title"] = title.map { .string($0) }
        notification["body"] = body.map { .string($0) }
        if let orderInfo { notification["orderInfo"] = try JSONValue.parse(orderInfo) }
        if !notification.isEmpty { object["notification"] = .object(notification) }
        if !data.isEmpty {
            var values = JSONObject()
            for pair in data {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                values[String(parts[0])] = .string(parts.count > 1 ? String(parts[1]) : "")
            }
            object["data"] = .object(values)
        }
        object["collapse_key"] = collapseKey.map { .string($0) }
        object["time_to_live"] = ttl.map { .integer(Int64($0)) }
        object["priority"] = priority.map { .string($0) }
        if contentAvailable { object["content_available"] = .bool(true) }
        if dryRun { object["dry_run"] = .bool(true) }
        return .object(object)
    }
}
