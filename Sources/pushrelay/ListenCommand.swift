import ArgumentParser
import Foundation
import Logging
import PushRelayClient
import PushRelayClientNIO
import PushRelayTLS
import PushRelayWire

/// `pushrelay listen`: a device on the command line. Registers (or reuses credentials), prints state changes, and
/// prints each message as the course's screen (or one JSON object per line with `--json`).
struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Receive push messages as a device and print them.",
        discussion: """
            Either --secret (and optionally --token) from an earlier registration, or --project and --client-key to \
            register now; --credentials FILE reuses the token and secret across runs. The token printed at \
            registration is what the back end sends to. State changes go to standard error, messages to standard \
            output.
            """
    )

    @Option(help: ArgumentHelp(
        "The relay's base URL, e.g. http://127.0.0.1:8080; repeat it for the nodes of one deployment.",
        discussion: """
            Tried in order: when the current relay cannot be reached (or answers 502-504), the next one is. A relay \
            that cannot be reached, or that refuses the registration for now (429, 503: after its Retry-After), is \
            tried again with back-off for as long as listen runs (a device waits for its relay); give --count and \
            --timeout to give up.
            """))
    var server: [String]

    @Option(help: "The device secret from an earlier registration.")
    var secret: String?

    @Option(help: "The registration token that belongs to --secret (shown in states only).")
    var token: String?

    @Option(help: "The project to register with.")
    var project: String?

    @Option(name: .customLong("client-key"), help: "The project's client key, to register with.")
    var clientKey: String?

    @Option(help: "The app identifier sent at registration.")
    var app: String = "pushrelay.listen"

    @Option(help: "The platform sent at registration.")
    var platform: String = "linux"

    @Option(help: "Read the token and secret from FILE when it exists; otherwise register and write them to FILE.")
    var credentials: String?

    @Option(help: "Write the token and secret to FILE after registering.")
    var save: String?

    @Option(name: .customLong("dedup-file"), help: "Persist the ids of handled messages in FILE.")
    var dedupFile: String?

    @Flag(help: "Print one JSON object per message (envelope and decoded notification) instead of the screen.")
    var json = false

    @Option(help: "Exit 0 after N messages.")
    var count: Int?

    @Option(help: "Exit non-zero if the --count messages have not arrived after S seconds.")
    var timeout: Double?

    @Option(name: .customLong("heartbeat-timeout"), help: "Replace a stream silent for S seconds.")
    var heartbeatTimeout: Double = 60

    @Option(help: "How to talk HTTP: nio (SwiftNIO and libnghttp2: HTTP/2, HTTP/1.1 fallback) or urlsession.")
    var transport: ListenTransport = .nio

    @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file (https, --transport nio).")
    var caFile: String?

    @Flag(help: "Log debug details to standard error.")
    var verbose = false

    func validate() throws {
        guard !server.isEmpty else { throw ValidationError("give --server URL (repeat it to fail over)") }
        for url in server where URL(string: url)?.host == nil {
            throw ValidationError("--server must be a URL like http://host:port: \(url)")
        }
        let registers = project != nil || clientKey != nil
        if registers && (project == nil || clientKey == nil) {
            throw ValidationError("--project and --client-key go together")
        }
        if secret == nil && !registers && credentials == nil {
            throw ValidationError("give --secret, or --project and --client-key, or --credentials FILE")
        }
        if secret != nil && registers {
            throw ValidationError("--secret and --project/--client-key exclude each other")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be positive") }
        if timeout != nil && count == nil { throw ValidationError("--timeout needs --count") }
        if !(heartbeatTimeout > 0) { throw ValidationError("--heartbeat-timeout must be positive") }
        if caFile != nil && transport == .urlsession {
            throw ValidationError("--ca-file works with --transport nio (URLSession trusts the system's roots)")
        }
    }

    func run() async throws {
        var logger = Logger(label: "pushrelay.listen") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .notice  // notice: each lost stream with its reason
        let configuration = makeConfiguration()
        let client: PushClient
        do {
            let kind = self.transport
            let tlsHandlerFactory = try makeTLSHandlerFactory(logger: logger)
            let make = { (configuration: PushClientConfiguration) throws -> any PushTransport in
                switch kind {
                case .nio: try HTTP2Transport(configuration: configuration, tlsHandlerFactory: tlsHandlerFactory)
                case .urlsession: try URLSessionTransport(configuration: configuration)
                }
            }
            let transport =
                configuration.fallbackServerURLs.isEmpty
                ? try make(configuration) : try FailoverTransport(configuration: configuration, makeTransport: make)
            client = try PushClient(configuration: configuration, transport: transport, logger: logger)
        } catch let error as PushClientError where error.code == .invalidFile {
            // A damaged credentials or deduplication file is not a usage error: one line, EX_NOINPUT.
            FileHandle.standardError.write(Data("pushrelay listen: \(error.message)\n".utf8))
            throw ExitCode(66)
        } catch {
            throw ValidationError("\(error)")
        }
        let output = ListenOutput(json: json)
        let states = client.states()
        // Without credentials, run() registers: it waits out a 429 or 503 (Retry-After) or an unreachable relay
        // as it waits for the stream. The token is printed (and --save written) once it has registered, and
        // always before the first message.
        let registration = Registration(save: save, output: output, printsToken: client.credentials == nil)
        if client.credentials != nil, let token = client.credentials?.token, secret == nil {
            output.token(token)
        }

        let received = MessageCounter()
        let wanted = count
        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await state in states {
                    output.state(state)
                    if case .registered = state { try await registration.registered(client.credentials) }
                }
                return .statesEnded
            }
            group.addTask {
                try await client.run { message in
                    try await registration.registered(client.credentials)
                    output.message(message)
                    if let wanted, await received.increment() >= wanted {
                        client.stop()
                    }
                }
                return .stopped
            }
            if let timeout {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                    return .timedOut
                }
            }
            while let outcome = try await group.next() {
                if outcome != .statesEnded {
                    group.cancelAll()
                    return outcome
                }
            }
            return Outcome.stopped
        }
        try await registration.registered(client.credentials)
        if outcome == .timedOut {
            let got = await received.value
            output.error("timeout: \(got) of \(count ?? 0) messages arrived")
            throw ExitCode(1)
        }
    }

    private enum Outcome: Sendable { case stopped, timedOut, statesEnded }

    private func makeConfiguration() -> PushClientConfiguration {
        let urls = server.map { URL(string: $0)! }
        var registration: PushClientConfiguration.Registration?
        if let project, let clientKey {
            registration = .init(project: project, app: app, platform: platform, clientKey: clientKey)
        }
        var configuration = PushClientConfiguration(
            serverURL: urls[0],
            registration: registration,
            credentials: secret.map { PushCredentials(token: token, secret: $0) },
            credentialsFile: credentials.map { URL(fileURLWithPath: $0) },
            heartbeatTimeout: .milliseconds(Int64(heartbeatTimeout * 1000)),
            deduplicationFile: dedupFile.map { URL(fileURLWithPath: $0) }
        )
        configuration.fallbackServerURLs = Array(urls.dropFirst())
        return configuration
    }
}

/// The client library's transports, as `--transport` names them.
extension ListenCommand {
    /// For `https` servers with the nio transport: OpenSSL (PushRelayTLS), ALPN `h2` then `http/1.1`, the system's
    /// roots or only `--ca-file`'s; one context for every `--server`. Nil when no server is `https`.
    func makeTLSHandlerFactory(logger: Logger) throws -> HTTP2Transport.TLSHandlerFactory? {
        guard transport == .nio, server.contains(where: { $0.lowercased().hasPrefix("https:") }) else { return nil }
        let context = try CLITLS.context(caFile: caFile, applicationProtocols: ["h2", "http/1.1"], logger: logger)
        return { host in context.makeHandler(serverHostname: host) }
    }
}

enum ListenTransport: String, ExpressibleByArgument, CaseIterable, Sendable {
    case nio, urlsession
}

/// Counts messages across the handler's calls.
/// What `listen` does once run() has registered the device: writes --save and prints the token, once.
private actor Registration {
    private let save: String?
    private let output: ListenOutput
    private var done: Bool

    init(save: String?, output: ListenOutput, printsToken: Bool) {
        self.save = save
        self.output = output
        self.done = !printsToken
    }

    func registered(_ credentials: PushCredentials?) throws {
        guard !done, let credentials else { return }
        done = true
        if let save { try credentials.save(to: URL(fileURLWithPath: save)) }
        output.token(credentials.token ?? "")
    }
}

private actor MessageCounter {
    private(set) var value = 0

    func increment() -> Int {
        value += 1
        return value
    }
}

/// How `listen` prints: messages on standard output (screen or JSON lines), states and errors on standard error.
private struct ListenOutput: Sendable {
    let json: Bool

    func token(_ token: String) {
        if json {
            write("token: \(token)\n", to: .standardError)
        } else {
            write("Token: \(token)\n", to: .standardOutput)
        }
    }

    func state(_ state: PushClientState) {
        switch state {
        case .received, .receivedMessage: return  // The message itself is printed.
        default: write("[\(state)]\n", to: .standardError)
        }
    }

    func error(_ text: String) {
        write("error: \(text)\n", to: .standardError)
    }

    func message(_ message: PushMessage) {
        let notification = Result { try message.salesNotification() }
        if json {
            var object: [String: JSON] = ["message_id": .string(message.id), "envelope": JSON(message.envelope)]
            switch notification {
            case .success(let sales):
                object["notification"] = (try? JSON.parse(JSONEncoder().encode(sales))) ?? .null
            case .failure(let error):
                object["notification"] = .null
                if let error = error as? NotificationDecodingError, error.code != .missingNotification {
                    object["notification_error"] = .string(error.description)
                }
            }
            write(JSON(object).jsonText + "\n", to: .standardOutput)
            return
        }
        var lines: [String]
        switch notification {
        case .success(let sales):
            lines = SalesMessageScreen(messageID: message.id, fromModel: sales).lines
        case .failure(let error):
            lines = ["Message Id: \(message.id)"]
            if let title = message.title { lines.append("Title: \(title)") }
            if let body = message.body { lines.append("Body: \(body)") }
            for (key, value) in message.notificationValues.sorted(by: { $0.key < $1.key }) {
                lines.append("\(key): \(value.displayText)")
            }
            for (key, value) in message.data.sorted(by: { $0.key < $1.key }) {
                lines.append("\(key): \(value.displayText)")
            }
            if let error = error as? NotificationDecodingError, error.code != .missingNotification {
                lines.append("Error: \(error)")
            }
        }
        write(lines.joined(separator: "\n") + "\n\n", to: .standardOutput)
    }

    private func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }
}
