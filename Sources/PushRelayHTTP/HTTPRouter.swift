public import HTTPTypes
public import NIOCore
import PushRelayWire

/// How a route handles its requests.
public enum HTTPHandler: Sendable {
    /// Runs on the connection's event loop once the whole body (at most `maxBodyBytes`) has arrived; the
    /// fast path for tiny answers such as `/healthz`. It must not block.
    case immediate(@Sendable (HTTPServerRequest, ByteBuffer) -> HTTPServerResponse)
    /// Runs as an async function; reads the body itself and may stream its response for hours.
    case async(@Sendable (HTTPServerRequest) async throws -> HTTPServerResponse)
    /// Runs as an async function once the whole body (at most `maxBodyBytes`) has arrived, collected on the
    /// event loop: `request.body` is complete. For API calls whose small body is needed whole (an FCM send, an
    /// acknowledgement): no body stream, and one task start per request instead of a task that starts at the
    /// head and is woken again by the body.
    case collected(@Sendable (HTTPServerRequest) async throws -> HTTPServerResponse)
    /// Runs on the connection's event loop once the whole body (at most `maxBodyBytes`) has arrived, like
    /// `.immediate`, and answers later by completing the ``HTTPResponsePromise``, which belongs to that event loop:
    /// the answer is submitted there, without a task. For the message path, whose answer waits for a store commit
    /// on another thread: the handler parses and validates here, hands the work on, and whoever finishes it
    /// completes the promise (on the loop, ideally, so that many answers share one wake-up). A failed promise
    /// answers like a handler error (`HTTPError` → its status, anything else → 500). The handler must not block.
    case promised(@Sendable (HTTPServerRequest, ByteBuffer, HTTPResponsePromise) -> Void)
}

/// What a route's gate says of a request from its head alone, before its body is read (credentials checked from the
/// headers, so that an unauthenticated client cannot make the server buffer bodies).
public enum HTTPGateDecision: Sendable {
    /// Read the body and run the handler.
    case allow
    /// Read the body and run the handler, handing it `value` as ``HTTPServerRequest/admission``: what the gate found
    /// out (the authenticated project, say), so that the handler does not work it out a second time. An object, so
    /// that handing it over costs a reference count and reading it back a class cast (an existential of any value
    /// was copied and cast through the runtime's generic path on every request).
    case admit(any AnyObject & Sendable)
    /// Answer this now and read no body: HTTP/1.1 closes the connection after the answer, HTTP/2 resets the rest of
    /// the stream (`RST_STREAM NO_ERROR`).
    case deny(HTTPServerResponse)
    /// Ask `check` (off the event loop, e.g. a store look-up) while the body arrives: a response from it is the
    /// answer, as for ``deny(_:)``, and the body read so far is dropped; nil lets the handler run once the body is
    /// whole.
    case verify(@Sendable () async -> HTTPServerResponse?)
}

/// A route's gate, called on the event loop with the request head: it must be quick and must not block.
public typealias HTTPGate = @Sendable (HTTPRequest) -> HTTPGateDecision

/// What the transport asks of the application for each request head.
public protocol HTTPServerResponder: Sendable {
    /// Chooses the handler for a request head. Called on the event loop: must be quick and must not block.
    func route(for head: HTTPRequest) -> HTTPRouteMatch

    /// The answer to an error about the request `head` that the transport gives itself (a body over the route's
    /// limit or not received in time) or that its handler threw, in the format the route's clients read. Called on
    /// the event loop or the handler's task. The default is plain text.
    func response(for error: HTTPError, to head: HTTPRequest) -> HTTPServerResponse

    /// The answer to any error a handler threw or failed its promise with (not only ``HTTPError``s). The default
    /// answers an ``HTTPError`` through ``response(for:to:)`` and anything else `500`.
    func response(forThrown error: any Error, to head: HTTPRequest) -> HTTPServerResponse
}

extension HTTPServerResponder {
    public func response(for error: HTTPError, to head: HTTPRequest) -> HTTPServerResponse {
        HTTPResponder.response(for: error)
    }

    /// The answer to any error a handler threw: an ``HTTPError`` through ``response(for:to:)``, anything else a
    /// plain `500`.
    public func response(forThrown error: any Error, to head: HTTPRequest) -> HTTPServerResponse {
        if let error = error as? HTTPError { return response(for: error, to: head) }
        return HTTPResponder.response(for: error)
    }
}

/// Renders an error the transport answers for a route (``HTTPServerResponder/response(for:to:)``), given the
/// request's head: every ``HTTPError`` of the route, whether the transport raised it (a body over the limit, a body
/// not received in time) or the handler threw it. ``HTTPRouter/errors(_:)`` makes one from an API's error format.
public typealias HTTPErrorRenderer = @Sendable (HTTPError, HTTPRequest) -> HTTPServerResponse

/// The result of routing a request head.
public enum HTTPRouteMatch: Sendable {
    case matched(HTTPHandler, maxBodyBytes: Int, pathParameters: [String: String], gate: HTTPGate?)
    case notFound
    case methodNotAllowed
}

/// A small router: exact segments and `{name}` captures, matched by method and path.
///
/// Enough for PushRelay's fixed API of a dozen routes; lookups walk a segment trie, so the cost does not grow
/// with the number of routes. Path segments are compared byte for byte; a trailing `*` segment, written
/// `{name*}`, captures the rest of the path.
public struct HTTPRouter: HTTPServerResponder {
    private struct Entry: Sendable {
        var handler: HTTPHandler
        var maxBodyBytes: Int
        var gate: HTTPGate?
        /// How the route's clients read errors; nil: plain text.
        var errors: HTTPErrorRenderer?
        /// The pattern it was added with (``routes``, ``matchedPattern(for:)``).
        var pattern: String
    }

    private final class Node: @unchecked Sendable {
        var children: [Substring: Node] = [:]
        var capture: (name: String, node: Node)?
        var restCapture: (name: String, methods: [HTTPRequest.Method: Entry])?
        var methods: [HTTPRequest.Method: Entry] = [:]
        /// On the root only: routes without captures by their whole path, so a static path costs one lookup.
        var exact: [Substring: [HTTPRequest.Method: Entry]] = [:]
        /// On the root only: every route added, in order (``routes``).
        var added: [(method: HTTPRequest.Method, pattern: String)] = []
        /// On the root only: ``translateErrors(_:)``.
        var translate: (@Sendable (any Error) -> HTTPError?)?
    }

    private let root = Node()

    /// The default body limit: 64 KiB.
    public static let defaultMaxBodyBytes = 64 * 1024

    public init() {}

    /// Adds a route. A later route with the same method and pattern replaces the earlier one.
    /// Call before the router is handed to a server; the router is not mutated afterwards. With `gate`, the
    /// transport asks it about each request's head before reading the body (``HTTPGateDecision``). With
    /// `errors`, the errors the transport answers for the route (a body over `maxBodyBytes`, a body not received
    /// in time) and the ``HTTPError``s its handler throws are rendered by it instead of as plain text
    /// (``errors(_:)``: in the API's format unless the error has a `Content-Type` of its own).
    public func add(
        _ method: HTTPRequest.Method,
        _ pattern: String,
        maxBodyBytes: Int = HTTPRouter.defaultMaxBodyBytes,
        gate: HTTPGate? = nil,
        errors: HTTPErrorRenderer? = nil,
        _ handler: HTTPHandler
    ) {
        var node = root
        let entry = Entry(handler: handler, maxBodyBytes: maxBodyBytes, gate: gate, errors: errors, pattern: pattern)
        root.added.removeAll { $0.method == method && $0.pattern == pattern }
        root.added.append((method, pattern))
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true)
        if !segments.contains(where: { $0.hasPrefix("{") }) {
            let path = Substring("/" + segments.joined(separator: "/"))
            root.exact[path, default: [:]][method] = entry
        }
        for (index, segment) in segments.enumerated() {
            if segment.hasPrefix("{") && segment.hasSuffix("*}") && index == segments.count - 1 {
                let name = String(segment.dropFirst().dropLast(2))
                var methods = node.restCapture?.methods ?? [:]
                methods[method] = entry
                node.restCapture = (name, methods)
                return
            } else if segment.hasPrefix("{") && segment.hasSuffix("}") {
                let name = String(segment.dropFirst().dropLast())
                if let capture = node.capture {
                    precondition(capture.name == name, "conflicting capture names at \(pattern)")
                    node = capture.node
                } else {
                    let child = Node()
                    node.capture = (name, child)
                    node = child
                }
            } else if let child = node.children[segment] {
                node = child
            } else {
                let child = Node()
                node.children[segment] = child
                node = child
            }
        }
        node.methods[method] = entry
    }

    /// Every route added, as (method, pattern), in the order they were added: for checks of the API's documentation
    /// against what is served.
    public var routes: [(method: HTTPRequest.Method, pattern: String)] { root.added }

    /// The pattern of the route `head` reaches, or nil when none does (not found, or not for its method).
    public func matchedPattern(for head: HTTPRequest) -> String? {
        if case .found(let entry, _) = lookup(head) { return entry.pattern }
        return nil
    }

    /// The route's `errors` renderer, or the error as it is when the route has none. A path served for other
    /// methods than the request's answers its `405` in the format of that path's routes, with `Allow` listing them
    /// (RFC 9110 §15.5.6).
    public func response(for error: HTTPError, to head: HTTPRequest) -> HTTPServerResponse {
        switch lookup(head) {
        case .found(let entry, _):
            if let errors = entry.errors { return errors(error, head) }
        case .methodNotAllowed(let methods):
            let allowed = Self.allowHeader(methods.keys)
            let renderer = methods.sorted { $0.key.rawValue < $1.key.rawValue }.lazy.compactMap(\.value.errors).first
            var response = renderer.map { $0(error, head) } ?? HTTPResponder.response(for: error)
            if error.status == .methodNotAllowed { response.head.headerFields[.allow] = allowed }
            return response
        case .notFound:
            break
        }
        return HTTPResponder.response(for: error)
    }

    /// A renderer in an API's error format: `format(error)` for an error without a format of its own, and the error
    /// as it is when it names one (a `Content-Type` field: the handler built the body already).
    public static func errors(_ format: @escaping @Sendable (HTTPError) -> HTTPServerResponse) -> HTTPErrorRenderer {
        { error, _ in
            guard error.headerFields[.contentType] == nil else { return HTTPResponder.response(for: error) }
            // The error's own fields (`Retry-After`, `Allow`, …) travel with the API's body.
            var response = format(error)
            for field in error.headerFields where response.head.headerFields[field.name] == nil {
                response.head.headerFields.append(field)
            }
            return response
        }
    }

    /// Makes `translate` the reading of errors that are not ``HTTPError``s, thrown by any route's handler (a
    /// storage failure as `503` with `Retry-After`, say): what it returns is answered like an ``HTTPError`` the
    /// handler threw, in the route's format; nil leaves the error a `500`. Call before the router is handed to a
    /// server.
    public func translateErrors(_ translate: @escaping @Sendable (any Error) -> HTTPError?) {
        root.translate = translate
    }

    public func response(forThrown error: any Error, to head: HTTPRequest) -> HTTPServerResponse {
        if let error = error as? HTTPError { return response(for: error, to: head) }
        if let translated = root.translate?(error) { return response(for: translated, to: head) }
        return HTTPResponder.response(for: error)
    }

    public func route(for head: HTTPRequest) -> HTTPRouteMatch {
        switch lookup(head) {
        case .found(let entry, let parameters):
            .matched(entry.handler, maxBodyBytes: entry.maxBodyBytes, pathParameters: parameters, gate: entry.gate)
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        }
    }

    private enum Lookup {
        case found(Entry, [String: String])
        case notFound
        /// The path is served, for these methods.
        case methodNotAllowed([HTTPRequest.Method: Entry])
    }

    /// `Allow`'s value for a path served for `methods`: sorted, `HEAD` with `GET` (served by it).
    static func allowHeader(_ methods: some Sequence<HTTPRequest.Method>) -> String {
        var names = Set(methods.map(\.rawValue))
        if names.contains("GET") { names.insert("HEAD") }
        return names.sorted().joined(separator: ", ")
    }

    private func lookup(_ head: HTTPRequest) -> Lookup {
        let fullPath = head.path ?? "/"
        // The query starts at the first `?`, looked for over the bytes (a `Character` search costs a grapheme
        // break check per character, on every request).
        let path = fullPath.utf8.firstIndex(of: UInt8(ascii: "?")).map { fullPath[..<$0] } ?? fullPath[...]
        let found = self.lookup(path: path, method: head.method)
        // `/fcm/%73end` is `/fcm/send` (RFC 3986 §6.2.2.2): a path that matched nothing is compared again in its
        // normal form. Only then: the paths served are written normally, and captures are decoded anyway.
        if case .notFound = found, path.utf8.contains(UInt8(ascii: "%")),
            let normal = PercentDecoding.normalizedPath(path)
        {
            return self.lookup(path: normal[...], method: head.method)
        }
        return found
    }

    private func lookup(path: Substring, method: HTTPRequest.Method) -> Lookup {
        // The same answer the trie walk below gives for a static path, in one lookup.
        if let methods = root.exact[path] { return Self.select(methods, method, [:]) }
        var parameters: [String: String] = [:]
        var node = root
        var remaining = PathSegments.split(path, omittingEmpty: true)[...]
        while let segment = remaining.first {
            if let child = node.children[segment] {
                node = child
            } else if let capture = node.capture {
                parameters[capture.name] = PercentDecoding.decode(segment, plus: .plus) ?? String(segment)
                node = capture.node
            } else if let rest = node.restCapture {
                parameters[rest.name] = remaining.joined(separator: "/")
                return Self.select(rest.methods, method, parameters)
            } else {
                return .notFound
            }
            remaining = remaining.dropFirst()
        }
        if node.methods.isEmpty { return .notFound }
        return Self.select(node.methods, method, parameters)
    }

    private static func select(
        _ methods: [HTTPRequest.Method: Entry],
        _ method: HTTPRequest.Method,
        _ parameters: [String: String]
    ) -> Lookup {
        if let entry = methods[method] ?? (method == .head ? methods[.get] : nil) {
            return .found(entry, parameters)
        }
        return .methodNotAllowed(methods)
    }
}
