import Foundation
import HTTPTypes
import Logging
import PushRelayWire

extension PushClient {
    /// Keeps the device's stream open and delivers messages until ``stop()`` is called or the calling task is
    /// cancelled. Registers first when the client has no credentials yet.
    ///
    /// Failures that retrying may cure (a lost or silent stream, a relay that cannot be reached, a `429` or `503`, an
    /// answer that is not an event stream, such as a captive portal's page) are retried after the backoff delay, or
    /// the server's `Retry-After` when longer (see ``PushClient``, *Reconnection*); so is the registration this
    /// method makes, unlike ``register()``. While it waits, the state is
    /// ``PushClientState/reconnecting(attempt:after:)`` and ``lastError`` says why.
    ///
    /// Failures that no retry can cure end the run at once, whether the registration or the stream met them, with
    /// ``PushClientState/failed(message:)`` published and ``lastError`` saying why: the relay's refusals below, and
    /// a configuration the request cannot be made with, such as a server URL the platform refuses (a port out of
    /// range) or a TLS handler factory that throws. Through a ``FailoverTransport`` a relay that cannot be used
    /// so is passed over for the next; only when none of them can be used does the run end.
    ///
    /// - Parameter onMessage: Called for each new message, before observers are told; return to acknowledge it,
    ///   throw to have it delivered again on the next stream. Runs on the client's task, one message at a time.
    /// - Throws: ``PushClientError`` when the client gives up: refused credentials
    ///   (``PushClientError/Code-swift.struct/unauthorized``), an unknown device
    ///   (``PushClientError/Code-swift.struct/notRegistered``), a URL that is not a relay's
    ///   (``PushClientError/Code-swift.struct/notFound``), a configuration that cannot work
    ///   (``PushClientError/Code-swift.struct/invalidConfiguration``,
    ///   ``PushClientError/Code-swift.struct/tlsNotConfigured``, ``PushClientError/Code-swift.struct/invalidFile``),
    ///   or ``BackoffPolicy/maximumAttempts`` spent (``PushClientError/Code-swift.struct/gaveUp``, the last failure
    ///   in its message and in ``lastError``); `CancellationError` when the task is cancelled. Returns normally after
    ///   ``stop()``.
    public func run(onMessage: @escaping @Sendable (PushMessage) async throws -> Void = { _ in }) async throws {
        let (stopSignal, stopContinuation) = AsyncStream.makeStream(of: Void.self)
        try shared.withLockedValue { shared in
            guard !shared.running else {
                throw PushClientError(code: .invalidConfiguration, message: "run() is already running")
            }
            shared.running = true
            shared.stopRequested = false
            shared.stopSignal = stopContinuation
            shared.lastError = nil
        }
        defer {
            shared.withLockedValue { shared in
                shared.running = false
                shared.processing = false
                shared.stopSignal = nil
            }
            stopContinuation.finish()
        }
        if self.credentials == nil, configuration.registration == nil {
            throw PushClientError(code: .invalidConfiguration, message: "no registration (project and client key)")
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Inside the group, so that stop() also ends a registration that waits to try again.
                    let credentials = try await self.credentialsForRun()
                    try await self.connectionLoop(credentials: credentials, onMessage: onMessage)
                }
                group.addTask {
                    for await _ in stopSignal { break }
                }
                try await group.next()
                group.cancelAll()
            }
        } catch let error as PushClientError {
            throw error
        } catch {
            await publisher.publish(.idle)
            throw error
        }
        await publisher.publish(.idle)
    }

    /// The credentials the stream opens with: the known ones, or a new registration, tried again as the stream is
    /// while it fails in a way that retrying may cure (``failure(for:)``).
    private func credentialsForRun() async throws -> PushCredentials {
        if let known = self.credentials { return known }
        var machine = ReconnectStateMachine(policy: configuration.backoff)
        var random = AnyRandomNumberGenerator(base: makeRandomNumberGenerator())
        var action = machine.start()
        var lastError: PushClientError?
        while true {
            try await follow(action, machine: &machine, lastError: lastError)
            let failure: ReconnectStateMachine.Failure
            do {
                return try await register(publishingFailure: false)
            } catch let error as PushClientError {
                if Task.isCancelled { throw CancellationError() }
                lastError = error
                failure = Self.failure(for: error)
            } catch {
                if Task.isCancelled || error is CancellationError { throw CancellationError() }
                // Not the relay's answer: the credentials file cannot be written. Retrying would register again.
                await publisher.publish(.failed(message: "registration failed: \(error)"))
                throw error
            }
            logger.notice("registration failed", metadata: ["relay.reason": "\(failure)"])
            action = machine.connectionLost(failure, connectedFor: nil, serverDelay: lastError?.retryAfter,
                                            using: &random)
        }
    }

    /// Carries out what the machine said to do before the next try: nothing (`connect`), wait (`reconnect`,
    /// published as ``PushClientState/reconnecting(attempt:after:)``), or stop (`fail`, published as
    /// ``PushClientState/failed(message:)`` and thrown).
    private func follow(
        _ action: ReconnectStateMachine.Action, machine: inout ReconnectStateMachine, lastError: PushClientError?
    ) async throws {
        switch action {
        case .connect:
            return
        case .reconnect(let delay, let attempt):
            await publisher.publish(.reconnecting(attempt: attempt, after: delay))
            try await Task.sleep(for: delay)
            machine.reconnecting()
        case .fail(let reason, let exhausted):
            await publisher.publish(.failed(message: reason))
            // Spent attempts are `gaveUp` whatever the last failure was (its status stays readable, and the failure
            // itself in `lastError`); a refusal keeps its own code (`unauthorized`, `notRegistered`, `notFound`), and
            // so does a configuration that cannot work (`invalidConfiguration`, `tlsNotConfigured`, `invalidFile`).
            throw PushClientError(
                code: exhausted ? .gaveUp : lastError?.code ?? .gaveUp, message: reason, status: lastError?.status)
        }
    }

    /// How ``run(onMessage:)`` takes a failure, of its registration and of the stream alike: the one rule of what
    /// retrying may cure. Final are a refusal that names the request or its credentials wrong (401/403, 404, 410)
    /// and a configuration the request cannot be made with (``PushClientError/Code-swift.struct/invalidConfiguration``,
    /// such as a server URL the platform refuses; ``PushClientError/Code-swift.struct/tlsNotConfigured``, a TLS
    /// handler factory that throws; ``PushClientError/Code-swift.struct/invalidFile``): the same request fails the
    /// same way however often it is made. Everything else may pass: a lost or silent connection, a `429` or `503`,
    /// and a `200` that is not an event stream (``PushClientError/Code-swift.struct/invalidResponse``), which is
    /// what a captive portal or a misconfigured proxy answers until the user signs in or the network changes.
    ///
    /// ``FailoverTransport`` asks the same rule whether a relay's error ends its pass.
    static func failure(for error: PushClientError) -> ReconnectStateMachine.Failure {
        switch error.code {
        case .heartbeatTimeout: .heartbeatTimeout
        // The error's text without its code: the error thrown at the end carries the code once.
        case .unauthorized, .notRegistered, .notFound: .permanent(error.message)
        // A request that cannot be made as configured: no wait makes it.
        case .invalidConfiguration, .invalidFile, .tlsNotConfigured: .permanent(error.message)
        default: .transient(error.description)
        }
    }

    /// The reconnect loop: one stream after another, as the ``ReconnectStateMachine`` says.
    private func connectionLoop(
        credentials: PushCredentials, onMessage: @Sendable (PushMessage) async throws -> Void
    ) async throws {
        var machine = ReconnectStateMachine(policy: configuration.backoff,
                                            resumeEventID: shared.withLockedValue { $0.resumeEventID })
        defer {
            let resumeEventID = machine.resumeEventID
            shared.withLockedValue { $0.resumeEventID = resumeEventID }
        }
        var random = AnyRandomNumberGenerator(base: makeRandomNumberGenerator())
        var action = machine.start()
        var lastError: PushClientError?
        while true {
            try await follow(action, machine: &machine, lastError: lastError)
            await publisher.publish(.connecting)
            let request = api.streamRequest(secret: credentials.secret, lastEventID: machine.resumeEventID)
            var connectedAt: ContinuousClock.Instant?
            var stopped = false
            let failure: ReconnectStateMachine.Failure
            var serverDelay: Duration?
            do {
                try await transport.withStreamingResponse(to: request, idleTimeout: configuration.heartbeatTimeout) {
                    head, reader in
                    guard head.status == 200 else {
                        try RelayAPI.check(head.status, headerFields: head.headerFields,
                                           body: try await reader.next() ?? [], operation: "stream")
                        throw PushClientError(code: .httpStatus, message: "stream: status \(head.status)",
                                              status: head.status)
                    }
                    var pending: [UInt8]?
                    if try !Self.checkEventStreamContentType(head.headerFields) {
                        // Without a Content-Type only the first bytes tell an event stream from a page (a captive
                        // portal's): read them before the stream counts as open, so that a page is never
                        // published as `connected`. A relay writes its first comment at once.
                        while let chunk = try await reader.next() {
                            guard !chunk.isEmpty else { continue }
                            try Self.checkEventStreamStart(chunk)
                            pending = chunk
                            break
                        }
                        if pending == nil { return }  // An empty body: the server ended the stream.
                    }
                    machine.connected()
                    connectedAt = .now
                    shared.withLockedValue { $0.lastError = nil }
                    logger.debug("stream open", metadata: ["relay.resume": "\(machine.resumeEventID ?? "-")"])
                    await publisher.publish(.connected(token: credentials.token))
                    var parser = ServerSentEventParser()
                    var first = pending == nil
                    func nextChunk() async throws -> [UInt8]? {
                        if let chunk = pending {
                            pending = nil
                            return chunk
                        }
                        return try await reader.next()
                    }
                    while let chunk = try await nextChunk() {
                        if first, !chunk.isEmpty {
                            first = false
                            try Self.checkEventStreamStart(chunk)
                        }
                        for output in try parser.feed(chunk) {
                            guard case .event(let event) = output else { continue }  // Comments are heartbeats.
                            let outcome = try await deliver(event, secret: credentials.secret, machine: &machine,
                                                            onMessage: onMessage)
                            if outcome == .stop {
                                stopped = true
                                return
                            }
                        }
                    }
                }
                if stopped { return }
                failure = .transient("the server ended the stream")
            } catch let error as PushClientError {
                if Task.isCancelled { throw CancellationError() }
                lastError = error
                serverDelay = error.retryAfter
                failure = Self.failure(for: error)
                shared.withLockedValue { $0.lastError = error }
            } catch {
                if Task.isCancelled || error is CancellationError { throw CancellationError() }
                // A transport's own error (a socket's, say): a connection that did not hold, for the app's eyes.
                let wrapped = PushClientError(code: .connectionClosed, message: "stream: \(error)")
                lastError = wrapped
                failure = .transient("\(error)")
                shared.withLockedValue { $0.lastError = wrapped }
            }
            // Notice, not info: why the client reconnects is what a user of `listen` (or an app's log) needs to see.
            logger.notice("stream lost", metadata: ["relay.reason": "\(failure)"])
            action = machine.connectionLost(failure, connectedFor: connectedAt.map { .now - $0 },
                                            serverDelay: serverDelay, using: &random)
        }
    }

    private enum Outcome { case next, stop }

    /// A relay answers the stream `200` with `Content-Type: text/event-stream` (parameters such as `charset` and the
    /// media type's case aside); a `200` with another type (a captive portal's or a proxy's HTML page, JSON) is not
    /// an event stream: the server URL, or something between, points at something else.
    ///
    /// A missing (or empty) `Content-Type` is let through: HTTP lets a server leave it out, and
    /// ``checkEventStreamStart(_:)`` still checks the body's first bytes. Returns whether the answer had one.
    @discardableResult
    static func checkEventStreamContentType(_ fields: HTTPFields) throws -> Bool {
        let values = fields[values: .contentType].filter { !$0.allSatisfy { $0 == " " || $0 == "\t" } }
        for value in values {
            let mediaType = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .trimmingCharacters(in: .whitespaces)
            if mediaType.lowercased() == DeviceAPI.eventStreamContentType { continue }
            let shown = value.prefix(80)  // HTTPTypes has already refused CR, LF and NUL in a field value.
            throw PushClientError(
                code: .invalidResponse,
                message: "stream: the answer's Content-Type is \"\(shown)\", not \(DeviceAPI.eventStreamContentType): "
                    + "is the server URL a relay's (or is a captive portal or proxy answering)?")
        }
        return !values.isEmpty
    }

    /// A relay's stream starts with a comment (`: connected`) or a field line; a `200` whose body starts with
    /// anything else (an HTML page, JSON) is not an event stream: the server URL points at something else. The
    /// second line of defence after ``checkEventStreamContentType(_:)``, for an answer without a `Content-Type`.
    static func checkEventStreamStart(_ chunk: [UInt8]) throws {
        switch chunk[0] {
        case UInt8(ascii: ":"), UInt8(ascii: "d"), UInt8(ascii: "i"), UInt8(ascii: "e"), UInt8(ascii: "r"),
            UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0xEF:  // 0xEF: a byte-order mark
            return
        default:
            let start = String(decoding: chunk.prefix(24), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
            throw PushClientError(
                code: .invalidResponse,
                message: "stream: the answer is not an event stream (it begins \"\(start)\"): is the server URL a relay's?")
        }
    }

    /// Hands one event to the app: dedup, handler, observers, remember, acknowledge.
    private func deliver(
        _ event: ServerSentEvent,
        secret: String,
        machine: inout ReconnectStateMachine,
        onMessage: @Sendable (PushMessage) async throws -> Void
    ) async throws -> Outcome {
        guard event.hasOwnID, let id = event.lastEventID, !id.isEmpty else {
            logger.warning("event without id ignored", metadata: ["relay.event": "\(event.type)"])
            return .next
        }
        let (stopRequested, duplicate) = shared.withLockedValue { shared in
            if !shared.stopRequested { shared.processing = true }
            return (shared.stopRequested, shared.deduplicator.contains(id))
        }
        if stopRequested { return .stop }
        defer { shared.withLockedValue { $0.processing = false } }
        var logger = self.logger
        logger[metadataKey: "relay.message.id"] = "\(id)"

        if duplicate {
            logger.debug("duplicate acknowledged again")
        } else if let envelope = try? JSON.parse(event.data).dictionaryValue {
            let message = PushMessage(id: id, envelope: envelope)
            do {
                try await onMessage(message)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                logger.warning("handler failed; message will be delivered again", metadata: ["error": "\(error)"])
                machine.messageFailed(id: id)
                return afterMessage
            }
            let state: PushClientState
            do {
                state = .received(try message.salesNotification(), messageID: id)
            } catch let error as NotificationDecodingError where error.code != .missingNotification {
                logger.warning("orderInfo is malformed", metadata: ["relay.field": "\(error.field)"])
                state = .receivedMessage(message)
            } catch {
                state = .receivedMessage(message)
            }
            await publisher.publish(state, message: message)
        } else {
            logger.error("event data is not a JSON object; acknowledged and dropped")
        }
        remember(id, logger: logger)
        machine.messageHandled(id: id)
        await acknowledge(id, secret: secret, logger: logger)
        return afterMessage
    }

    /// What follows a message's handling, whatever its outcome: a ``stop()`` that came while it was processed did not
    /// signal (it waits for the message), so it is seen here, or the stream would go on reading.
    private var afterMessage: Outcome {
        shared.withLockedValue { $0.stopRequested } ? .stop : .next
    }

    private func remember(_ id: String, logger: Logger) {
        do {
            try shared.withLockedValue { _ = try $0.deduplicator.insert(id) }
        } catch {
            logger.error("cannot write the deduplication file", metadata: ["error": "\(error)"])
        }
    }

    /// `POST /v1/ack`. A failure is logged only: the next stream's `Last-Event-ID` acknowledges too, and a message
    /// delivered again is recognised as a duplicate.
    private func acknowledge(_ id: String, secret: String, logger: Logger) async {
        do {
            let response = try await transport.send(api.acknowledgeRequest(ids: [id], secret: secret))
            try RelayAPI.check(response, operation: "ack")
        } catch {
            logger.warning("acknowledgement failed", metadata: ["error": "\(error)"])
        }
    }
}

/// A `RandomNumberGenerator` around any other, so that an injected generator can be passed `inout`.
struct AnyRandomNumberGenerator: RandomNumberGenerator {
    var base: any RandomNumberGenerator

    mutating func next() -> UInt64 {
        base.next()
    }
}
