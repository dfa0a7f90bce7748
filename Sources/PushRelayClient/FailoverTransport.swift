import Foundation

/// A ``PushTransport`` over several relays of one deployment (nodes on one PostgreSQL, or regions behind their own
/// names), tried in order: a request goes to the current relay; when it cannot be reached (the connection fails or
/// closes before an answer) or answers `502`, `503` or `504`, the same request goes to the next one, once around the
/// list. The relay that answered stays current for the requests after it, so a client moves on from a dead node and
/// does not go back to it until the node it moved to fails in turn.
///
/// Requests are safe to repeat on another relay: registration creates at most one extra, unused device when a node
/// dies after committing it and before answering; the stream resumes from `Last-Event-ID`; acknowledgements are
/// idempotent. A stream that breaks after its answer began is not retried here: ``PushClient/run(onMessage:)``
/// reconnects with its backoff, and that new request starts at the current relay.
///
/// ``PushClient/init(configuration:logger:)`` builds one for ``PushClientConfiguration/fallbackServerURLs``; with
/// another transport, wrap one instance per URL:
///
/// ```swift
/// let transport = try FailoverTransport(configuration: configuration) { try HTTP2Transport(configuration: $0) }
/// ```
public final class FailoverTransport: PushTransport {
    private let transports: [any PushTransport]
    private let current = LockedValue(0)

    /// One transport per URL of ``PushClientConfiguration/serverURLs``, each made by `makeTransport` from a copy of
    /// `configuration` whose ``PushClientConfiguration/serverURL`` is that URL.
    ///
    /// - Throws: ``PushClientError/Code-swift.struct/invalidConfiguration`` when the URLs' paths differ (the
    ///   client adds one path prefix to every request), or what `makeTransport` throws.
    public init(
        configuration: PushClientConfiguration,
        makeTransport: (PushClientConfiguration) throws -> any PushTransport
    ) throws {
        let urls = configuration.serverURLs
        let prefix = Self.pathPrefix(configuration.serverURL)
        if let other = urls.first(where: { Self.pathPrefix($0) != prefix }) {
            throw PushClientError(
                code: .invalidConfiguration,
                message: "every server URL must have the same path as \(configuration.serverURL): \(other)")
        }
        self.transports = try urls.map { url in
            var single = configuration
            single.serverURL = url
            single.fallbackServerURLs = []
            return try makeTransport(single)
        }
    }

    /// Failover over transports made elsewhere, tried in the given order.
    public init(transports: [any PushTransport]) {
        precondition(!transports.isEmpty, "a failover transport needs at least one transport")
        self.transports = transports
    }

    /// The index, in the list given at creation, of the relay requests go to first.
    public var currentIndex: Int { current.withLockedValue { $0 } }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await self.inOrder { transport, isLast in
            let response = try await transport.send(request)
            if Self.isUnavailable(response.status), !isLast { throw Unavailable() }
            return response
        }
    }

    public func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws {
        try await self.inOrder { transport, isLast in
            try await transport.withStreamingResponse(to: request, idleTimeout: idleTimeout) { head, reader in
                if Self.isUnavailable(head.status), !isLast { throw Unavailable() }
                do {
                    try await body(head, reader)
                } catch {
                    // The answer began: whatever happens now is the caller's, not a reason to try another relay.
                    throw Answered(error: error)
                }
            }
        }
    }

    public func shutdown() async {
        for transport in transports { await transport.shutdown() }
    }

    // MARK: Order

    /// The request's answer came, and then `error`: passed through as it is.
    private struct Answered: Error { let error: any Error }

    /// A `502`, `503` or `504` from a relay that is not the last to try: the next one is tried. The last relay's
    /// answer is the caller's, whatever its status.
    private struct Unavailable: Error {}

    private static func isUnavailable(_ status: Int) -> Bool { (502...504).contains(status) }

    /// Runs `attempt` on the current relay, then on each next one while it cannot be reached (`attempt` is told
    /// whether its relay is the last to try); the relay that answers becomes current.
    private func inOrder<Result>(
        _ attempt: (any PushTransport, _ isLast: Bool) async throws -> Result
    ) async throws -> Result {
        let start = currentIndex
        var lastError: (any Error)?
        for offset in 0..<transports.count {
            let index = (start + offset) % transports.count
            do {
                let result = try await attempt(transports[index], offset == transports.count - 1)
                self.makeCurrent(index, after: start)
                return result
            } catch let answered as Answered {
                self.makeCurrent(index, after: start)
                throw answered.error
            } catch let error as Unavailable {
                lastError = error
            } catch let error as PushClientError where error.code == .connectionClosed {
                lastError = error
            }
        }
        throw lastError ?? PushClientError(code: .connectionClosed, message: "no relay to try")
    }

    private func makeCurrent(_ index: Int, after start: Int) {
        guard index != start else { return }
        current.withLockedValue { if $0 == start { $0 = index } }
    }

    private static func pathPrefix(_ url: URL) -> String {
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
