import Foundation
import HTTPTypes

/// A ``PushTransport`` over several relays of one deployment (nodes on one PostgreSQL, or regions behind their own
/// names), tried in order: a request goes to the current relay; when it cannot be reached (the connection fails or
/// closes before an answer) or answers `502`, `503` or `504`, the same request goes to the next one, once around the
/// list. The relay that answered stays current for the requests after it, so a client moves on from a dead node and
/// does not go back to it until the node it moved to fails in turn.
///
/// When a relay refuses and the next one answers, the answer is the next one's, and nobody waits. When every relay
/// tried refused (the answer that ends the pass, the last relay's or a `429` that does not move on, is a `429` or a
/// `502`–`504` too), the caller gets that answer with one `Retry-After` for all of them, as a single relay's refusal
/// carries its own: the shortest wait any of them asked for (a `503`'s or a `429`'s `Retry-After`, counted from
/// when it came, in whole seconds rounded up), and the relay that asked for it becomes current, so that the next
/// request starts with it. If one of them named no wait (it could not be reached, or answered `502`, `504`, or a
/// `503` without `Retry-After`), it may be back at any moment: the answer then carries no `Retry-After`, and the
/// caller's own backoff alone paces it. A relay tried alone hands on its answer as it came.
/// ``PushClient/run(onMessage:)`` waits the longer of that `Retry-After` (up to ``BackoffPolicy/maximumRetryAfter``)
/// and its backoff before it tries the list again; ``PushClient/register()`` hands it on in
/// ``PushClientError/retryAfter``.
///
/// A relay whose transport cannot make the request at all, an error no retry cures
/// (``PushClientError/Code-swift.struct/invalidConfiguration``, such as a server URL the platform refuses;
/// ``PushClientError/Code-swift.struct/tlsNotConfigured``, a TLS handler factory that throws for its host), is passed
/// over for the next one too, and the relay that answers becomes current. It is left out of the wait: when the
/// others refused, their answer is the pass's (with their shortest `Retry-After`, as above, as a
/// ``PushClientError/Code-swift.struct/httpStatus`` when the last relay tried was the unusable one), and when one of
/// them could not be reached, that failure is; both are retried. Only when no relay of the list can be used does the
/// pass end with that error (the first relay's code, every relay's in its message), which ends
/// ``PushClient/run(onMessage:)`` with ``PushClientState/failed(message:)``, as on a single relay.
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
        try await self.inOrder { transport, index, isLast, refusals in
            var response = try await transport.send(request)
            if Self.isUnavailable(response.status), !isLast {
                refusals.refused(by: index, status: response.status, headerFields: response.headerFields)
                throw Unavailable(status: response.status)
            }
            response.headerFields = refusals.answer(from: index, status: response.status,
                                                    headerFields: response.headerFields)
            return response
        }
    }

    public func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws {
        try await self.inOrder { transport, index, isLast, refusals in
            try await transport.withStreamingResponse(to: request, idleTimeout: idleTimeout) { head, reader in
                if Self.isUnavailable(head.status), !isLast {
                    refusals.refused(by: index, status: head.status, headerFields: head.headerFields)
                    throw Unavailable(status: head.status)
                }
                let fields = refusals.answer(from: index, status: head.status, headerFields: head.headerFields)
                do {
                    try await body(TransportResponseHead(status: head.status, headerFields: fields), reader)
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
    private struct Unavailable: Error {
        let status: Int
    }

    static func isUnavailable(_ status: Int) -> Bool { (502...504).contains(status) }

    /// What the relays tried so far in one pass said about when to ask them again.
    struct Refusals {
        /// Whether a relay was tried before the one asked now.
        private var tried = false
        /// Whether one of them named no time (it could not be reached; a `502`, a `504`, a `503` without a readable
        /// `Retry-After`): it may be back at any moment.
        private var untimed = false
        /// The earliest time one of them asked to be tried again, and which relay it was.
        private var earliest: (index: Int, at: ContinuousClock.Instant)?
        /// The relay the next request starts with, when every relay refused and named a time: the one whose wait
        /// ends first.
        private(set) var nextStart: Int?

        /// A relay could not be reached.
        mutating func unreachable() {
            tried = true
            untimed = true
        }

        /// Relay `index` refused with `status`; its `Retry-After` counts when the status is one it applies to.
        mutating func refused(by index: Int, status: Int, headerFields: HTTPFields) {
            tried = true
            guard RetryAfter.applies(to: status), let value = headerFields[.retryAfter],
                  let delay = RetryAfter.delay(value, now: Date())
            else {
                untimed = true
                return
            }
            let at = ContinuousClock.now + delay
            if earliest.map({ at < $0.at }) ?? true { earliest = (index, at) }
        }

        /// The header fields to hand on with the answer of relay `index`, the last one asked: its own, unless
        /// every relay refused, in which case `Retry-After` is the shortest wait of all (none when one of them named
        /// none).
        mutating func answer(from index: Int, status: Int, headerFields: HTTPFields) -> HTTPFields {
            guard tried, FailoverTransport.isUnavailable(status) || RetryAfter.applies(to: status) else {
                return headerFields
            }
            refused(by: index, status: status, headerFields: headerFields)
            var fields = headerFields
            fields[.retryAfter] = wait().map { String($0.components.seconds) }
            return fields
        }

        /// The wait to hand on when every relay tried refused: the shortest any of them asked for, in whole seconds
        /// rounded up (never sooner than a relay asked), its relay becoming ``nextStart``; `nil` when one of them
        /// named none.
        mutating func wait() -> Duration? {
            guard !untimed, let earliest else { return nil }
            let remaining = max(.zero, earliest.at - .now)
            nextStart = earliest.index
            return .seconds(Int64(remaining.inSeconds.rounded(.up)))
        }
    }

    /// Runs `attempt` on the current relay, then on each next one while it cannot be reached (`attempt` is told
    /// its relay's index, whether its relay is the last to try, and what the relays before it said); the relay that
    /// answers becomes current, or, when every relay refused with a `Retry-After`, the one whose wait ends first.
    private func inOrder<Result>(
        _ attempt: (any PushTransport, _ index: Int, _ isLast: Bool, _ refusals: inout Refusals) async throws -> Result
    ) async throws -> Result {
        let start = currentIndex
        var refusals = Refusals()
        var lastError: (any Error)?
        // The relays whose transport cannot make the request at all (``PushClient/failure(for:)`` calls their error
        // permanent: a configuration error, such as a TLS handler factory that throws). They name no time and
        // will not be back by themselves, so they do not count in the pass's `Retry-After`.
        var unusable: [(index: Int, error: PushClientError)] = []
        for offset in 0..<transports.count {
            let index = (start + offset) % transports.count
            do {
                let result = try await attempt(transports[index], index, offset == transports.count - 1, &refusals)
                self.makeCurrent(refusals.nextStart ?? index, after: start)
                return result
            } catch let answered as Answered {
                self.makeCurrent(refusals.nextStart ?? index, after: start)
                throw answered.error
            } catch let error as Unavailable {
                lastError = error
            } catch let error as PushClientError where error.code == .connectionClosed {
                refusals.unreachable()
                lastError = error
            } catch let error as PushClientError where PushClient.failure(for: error).isPermanent {
                unusable.append((index, error))
            }
        }
        if let unavailable = lastError as? Unavailable {
            // A relay refused and the last one tried cannot be used: the refusals are the pass's answer, thrown as
            // the caller's check throws a last relay's refusal, with the wait of those that named one.
            let retryAfter = refusals.wait()
            self.makeCurrent(refusals.nextStart ?? start, after: start)
            let which = unusable.map { "relay \($0.index): \($0.error)" }.joined(separator: "; ")
            throw PushClientError(
                code: .httpStatus,
                message: "every relay refused (status \(unavailable.status)) or cannot be used (\(which))",
                status: unavailable.status, retryAfter: retryAfter)
        }
        if let lastError { throw lastError }
        // No relay can be used: the run ends, as it would on one relay.
        guard let first = unusable.first else {
            throw PushClientError(code: .connectionClosed, message: "no relay to try")
        }
        if unusable.count == 1 { throw first.error }
        throw PushClientError(
            code: first.error.code,
            message: "no relay can be used: "
                + unusable.map { "relay \($0.index): \($0.error)" }.joined(separator: "; "))
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
