import Foundation
public import Logging

/// The device side of PushRelay: registers, keeps one stream open, hands each message to the app once, and
/// publishes its state to observers.
///
/// ```swift
/// let client = try PushClient(configuration: configuration)
/// let credentials = try await client.register()          // hand credentials.token to the back end
/// let viewModel = SalesMessageViewModel(client: client)  // the screen observes this
/// try await client.run()                                 // until stop() or cancellation
/// ```
///
/// ## Delivery
/// Each message is handed to the `onMessage` handler of ``run(onMessage:)``; when it returns, the observers are
/// told (``PushClientState/received(_:messageID:)``), the message id is remembered for deduplication and the
/// message is acknowledged (`POST /v1/ack`). A handler that throws means no acknowledgement: the relay delivers
/// the message again on the next stream. Messages delivered again after they were handled (at-least-once delivery)
/// are recognised by id and only acknowledged again; the window of ids survives reconnects, and restarts when
/// ``PushClientConfiguration/deduplicationFile`` is set. An event whose data is not a JSON object (never one a
/// relay sends: only a misbehaving server) reaches no handler; it is logged at `error` and acknowledged, so that
/// it is not delivered again for ever.
///
/// ## Reconnection
/// A lost, refused or silent stream (nothing for ``PushClientConfiguration/heartbeatTimeout``) is replaced after a
/// backoff delay (``BackoffPolicy``), resuming with `Last-Event-ID`. A stream refused `429` or `503` with
/// `Retry-After` (the relay draining, or a proxy or load balancer in front of it) waits at least what the server
/// asked, never less than the backoff, and at most ``BackoffPolicy/maximumRetryAfter`` (one hour by default); the
/// wait is published in ``PushClientState/reconnecting(attempt:after:)`` and counts as an attempt. A `200` that is
/// not an event stream (its `Content-Type` is not `text/event-stream`, or, without one, its first bytes are not an
/// event stream's) is what a captive portal (a hotel's or an airport's Wi-Fi sign-in page) or a misconfigured proxy
/// answers: it is retried like a lost connection, each answer an attempt, so the backoff grows, and
/// ``lastError`` says ``PushClientError/Code-swift.struct/invalidResponse`` while the client waits. Only
/// ``BackoffPolicy/maximumAttempts`` (unlimited by default) ends such a run of answers, as it ends any run of
/// failures that retrying may cure, with ``PushClientError/Code-swift.struct/gaveUp``. Refused credentials
/// (401/403), a URL that is not a relay's (404) and a removed device (410) stop the client at once with
/// ``PushClientState/failed(message:)``, and so does a request that cannot be made as configured
/// (``PushClientError/Code-swift.struct/invalidConfiguration``, such as a server URL the transport refuses;
/// ``PushClientError/Code-swift.struct/tlsNotConfigured``, a TLS handler factory that throws), whether the stream or
/// ``run(onMessage:)``'s registration met it; ``lastError`` says which. Over a ``FailoverTransport`` such a relay
/// is passed over for the next, and only a list none of which can be used stops the client. A `retry:` field on
/// the stream is ignored: the backoff policy decides.
/// Over HTTP/2 (the default) the acknowledgements are further streams of the stream's connection; on the HTTP/1.1
/// fallback each acknowledgement is its own connection.
///
/// ``run(onMessage:)`` on a client without credentials registers first, and retries a registration that fails for
/// now (a `429` or `503`, with its `Retry-After` honoured the same way; a relay that cannot be reached; an answer
/// that is not a relay's) on the same terms; ``register()`` called by the app is one attempt.
///
/// ## Observers
/// ``SalesMessageViewModel`` (and its delegate), ``states()`` and ``salesNotifications()`` are fed from one source
/// of truth and notified **on the main actor**, in order: view models (and their delegates) first, then state
/// streams, then notification streams. The client waits for each notification before it handles the next event.
public final class PushClient: Sendable {
    /// The configuration the client was created with.
    public let configuration: PushClientConfiguration

    let logger: Logger
    /// The transport the client talks HTTP through.
    public let transport: any PushTransport
    let api: RelayAPI
    let publisher = PushStatePublisher()
    let makeRandomNumberGenerator: @Sendable () -> any RandomNumberGenerator
    let shared: LockedValue<Shared>

    /// The client's mutable state shared between `run`, `stop` and the accessors.
    struct Shared {
        var credentials: PushCredentials?
        var deduplicator: MessageDeduplicator
        var resumeEventID: String?
        var running = false
        var processing = false
        var stopRequested = false
        var stopSignal: AsyncStream<Void>.Continuation?
        var lastError: PushClientError?
    }

    /// Creates a client on the platform's `URLSession` (``URLSessionTransport``): HTTP/2 on Apple platforms,
    /// FoundationNetworking on Linux; the stream and the acknowledgements share one session.
    ///
    /// Reads ``PushClientConfiguration/credentialsFile`` and ``PushClientConfiguration/deduplicationFile`` when they
    /// exist. Opens no connection. With ``PushClientConfiguration/fallbackServerURLs`` the transport is a
    /// ``FailoverTransport`` over one `URLSessionTransport` per URL. On Linux servers and test hosts, the `PushRelayClientNIO` module's
    /// `HTTP2Transport` (SwiftNIO, libnghttp2) is the alternative: pass it to ``init(configuration:transport:logger:)``.
    ///
    /// - Throws: ``PushClientError`` for an unusable server URL or an unreadable file.
    public convenience init(configuration: PushClientConfiguration, logger: Logger = Logger(label: "pushrelay.client"))
        throws
    {
        let transport: any PushTransport =
            configuration.fallbackServerURLs.isEmpty
            ? try URLSessionTransport(configuration: configuration)
            : try FailoverTransport(configuration: configuration) { try URLSessionTransport(configuration: $0) }
        try self.init(configuration: configuration, transport: transport, logger: logger)
    }

    /// Creates a client on any ``PushTransport``.
    ///
    /// - Throws: ``PushClientError`` for an unreadable credentials or deduplication file.
    public convenience init(
        configuration: PushClientConfiguration, transport: any PushTransport,
        logger: Logger = Logger(label: "pushrelay.client")
    ) throws {
        try self.init(configuration: configuration, transport: transport, logger: logger,
                      makeRandomNumberGenerator: { SystemRandomNumberGenerator() })
    }

    /// Creates a client on any transport with a given source of randomness (tests make backoff deterministic).
    init(
        configuration: PushClientConfiguration,
        transport: any PushTransport,
        logger: Logger,
        makeRandomNumberGenerator: @escaping @Sendable () -> any RandomNumberGenerator
    ) throws {
        self.configuration = configuration
        self.transport = transport
        self.logger = logger
        self.api = RelayAPI(serverURL: configuration.serverURL)
        self.makeRandomNumberGenerator = makeRandomNumberGenerator
        var credentials = configuration.credentials
        if credentials == nil, let file = configuration.credentialsFile,
           FileManager.default.fileExists(atPath: file.path)
        {
            credentials = try PushCredentials.load(from: file)
        }
        let deduplicator = try configuration.deduplicationFile.map {
            try MessageDeduplicator.load(capacity: configuration.deduplicationCapacity, fileURL: $0)
        } ?? MessageDeduplicator(capacity: configuration.deduplicationCapacity)
        self.shared = LockedValue(Shared(credentials: credentials, deduplicator: deduplicator))
    }

    deinit {
        publisher.finish()
    }

    /// The device's credentials: given, loaded from the credentials file, or from ``register()``.
    public var credentials: PushCredentials? { shared.withLockedValue { $0.credentials } }

    /// The last published state.
    public var state: PushClientState { publisher.state }

    /// Why the client's last attempt to register or to open the stream failed: while ``run(onMessage:)`` waits to
    /// try again (``PushClientState/reconnecting(attempt:after:)``), what it waits out; after ``register()`` or
    /// ``run(onMessage:)`` threw, the last failure (when `run` gave up, ``PushClientError/Code-swift.struct/gaveUp``,
    /// the last attempt's). `nil` before any failure, and again once the stream is open
    /// (``PushClientState/connected(token:)``); ``run(onMessage:)`` starts with `nil`.
    ///
    /// An app can tell the user what is wrong while the client retries: for example
    /// ``PushClientError/Code-swift.struct/invalidResponse`` is an answer that is not a relay's, which is what a
    /// captive portal (a hotel's or an airport's Wi-Fi sign-in page) or a misconfigured proxy answers until the user
    /// signs in. It is set before the state that follows the failure is published.
    public var lastError: PushClientError? { shared.withLockedValue { $0.lastError } }

    /// A new stream of the client's states, starting with the current one. Ends when the client is released.
    ///
    /// Elements are yielded on the main actor, in order, after view models were updated; the buffer is unbounded,
    /// so a slow reader misses nothing.
    public func states() -> AsyncStream<PushClientState> {
        publisher.states()
    }

    /// A new stream of the sales notifications received from now on. Ends when the client is released.
    public func salesNotifications() -> AsyncStream<ReceivedSalesNotification> {
        publisher.salesNotifications()
    }

    /// A new stream of the app payloads under an envelope key, decoded as `Payload`, from the messages received
    /// from now on. Ends when the client is released.
    ///
    /// `key` is the envelope key as the device receives it: `gcm.notification.<key>` for a custom key of the
    /// sender's `notification` (also accepted without the prefix), or a `data` key. The value may be JSON text (how
    /// FCM delivers objects) or a nested object. Messages without the key, or whose value does not decode, are left
    /// out of this stream (the message itself is still handled and acknowledged).
    ///
    /// ```swift
    /// struct Coupon: Decodable, Sendable { let code: String; let percent: Int }
    /// for await coupon in client.notifications(of: Coupon.self, key: "gcm.notification.coupon") {
    ///     show(coupon.payload, id: coupon.messageID)
    /// }
    /// ```
    ///
    /// ``salesNotifications()`` is the scenario's ready-made case: `notifications(of: SalesNotification.self,
    /// key: "gcm.notification.orderInfo")`.
    public func notifications<Payload: Decodable & Sendable>(
        of type: Payload.Type, key: String
    ) -> AsyncStream<ReceivedNotification<Payload>> {
        publisher.notifications(of: type, key: key)
    }

    #if canImport(Observation)
    /// Makes `viewModel` follow this client (held weakly). ``SalesMessageViewModel/init(client:)`` calls this.
    @MainActor
    public func attach(_ viewModel: SalesMessageViewModel) {
        publisher.attach(viewModel)
    }
    #endif

    /// Registers the device with the relay (`POST /v1/register` with the client key) and returns the credentials;
    /// hand ``PushCredentials/token`` to the back end. Saves them to the credentials file when one is configured.
    ///
    /// Publishes ``PushClientState/registering`` and then ``PushClientState/registered(token:)``, or
    /// ``PushClientState/failed(message:)`` when it throws.
    ///
    /// One attempt: this method does not wait and does not try again, whatever the relay answers, so that the app
    /// decides when (and whether) to ask again, for example only while a screen that needs the token is shown. A
    /// relay that refuses for now (`429` past its registration rate, `503` while it drains or cannot write) throws
    /// ``PushClientError/Code-swift.struct/httpStatus`` with ``PushClientError/retryAfter`` set when it said how
    /// long to wait (`Retry-After`): ask again no sooner than that. ``run(onMessage:)`` on a client without
    /// credentials registers by itself and does wait and try again, as it does for the stream.
    ///
    /// - Throws: ``PushClientError`` (``PushClientError/Code-swift.struct/invalidConfiguration`` without a
    ///   registration, ``PushClientError/Code-swift.struct/unauthorized`` for a wrong client key,
    ///   ``PushClientError/Code-swift.struct/httpStatus`` with ``PushClientError/retryAfter`` for a refusal for now,
    ///   ``PushClientError/Code-swift.struct/invalidResponse`` for an answer that is not a relay's, such as a captive
    ///   portal's page, …); the credentials file's write error when it cannot be written.
    @discardableResult
    public func register() async throws -> PushCredentials {
        try await register(publishingFailure: true)
    }

    /// ``register()``; `publishingFailure` false leaves the state as it is when it throws (``run(onMessage:)``'s
    /// registration publishes ``PushClientState/reconnecting(attempt:after:)`` or ``PushClientState/failed(message:)``
    /// itself).
    func register(publishingFailure: Bool) async throws -> PushCredentials {
        guard let registration = configuration.registration else {
            throw PushClientError(code: .invalidConfiguration, message: "no registration (project and client key)")
        }
        await publisher.publish(.registering)
        do {
            let response = try await transport.send(api.registerRequest(registration))
            let credentials = try api.registration(from: response)
            if let file = configuration.credentialsFile {
                try credentials.save(to: file)
            }
            shared.withLockedValue { $0.credentials = credentials }
            logger.info("registered", metadata: ["relay.project": "\(registration.project)"])
            await publisher.publish(.registered(token: credentials.token ?? ""))
            return credentials
        } catch {
            if let error = error as? PushClientError { shared.withLockedValue { $0.lastError = error } }
            if publishingFailure { await publisher.publish(.failed(message: "registration failed: \(error)")) }
            throw error
        }
    }

    /// Unregisters the device (`DELETE /v1/register`); later sends to its token answer `NotRegistered`.
    /// Forgets the credentials and removes the credentials file. Stop ``run(onMessage:)`` first.
    ///
    /// - Throws: ``PushClientError`` when there are no credentials or the relay refuses.
    public func unregister() async throws {
        guard let credentials else {
            throw PushClientError(code: .invalidConfiguration, message: "not registered")
        }
        let response = try await transport.send(api.unregisterRequest(secret: credentials.secret))
        try RelayAPI.check(response, operation: "unregister")
        shared.withLockedValue { $0.credentials = nil }
        if let file = configuration.credentialsFile {
            try? FileManager.default.removeItem(at: file)
        }
        await publisher.publish(.idle)
    }

    /// Asks a running ``run(onMessage:)`` to return: a message being handled is finished first (handler,
    /// observers, acknowledgement); otherwise the stream is closed at once. Does nothing when not running.
    public func stop() {
        shared.withLockedValue { shared in
            guard shared.running else { return }
            shared.stopRequested = true
            if !shared.processing { shared.stopSignal?.yield() }
        }
    }
}
