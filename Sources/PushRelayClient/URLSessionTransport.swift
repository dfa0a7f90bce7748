import HTTPTypes
#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// The transport on the platform's `URLSession`: HTTP/2 on Apple platforms (HTTP/1.1 where the server offers no
/// more), FoundationNetworking (libcurl) on Linux. The stream and the acknowledgements share one session.
///
/// The stream is read with `bytes(for:)` where the platform has it, and through a data delegate otherwise
/// (FoundationNetworking has no `bytes(for:)`). A stream silent for the idle timeout (no message, no heartbeat) is
/// cancelled and reported as ``PushClientError/Code-swift.struct/heartbeatTimeout``; so is leaving the stream
/// (returning, throwing, or the task being cancelled) — the request is cancelled, which closes it.
///
/// `bytes(for:)` stops reading from the server while the stream is not read. The data delegate cannot: it holds at
/// most 4 MiB of a stream unread, and a stream that gets further ahead of its reader (a broken or hostile server
/// flooding it, or a handler that stalls under a backlog) is cancelled after what it already delivered, and the
/// read throws ``PushClientError/Code-swift.struct/bufferLimitExceeded``. No byte of the stream is dropped;
/// ``PushClient`` reconnects with its backoff, and unacknowledged messages arrive again.
///
/// A server URL that URLSession will not request at all (malformed, such as a port out of range; on Apple platforms
/// an `http` URL that App Transport Security forbids the app) fails with
/// ``PushClientError/Code-swift.struct/invalidConfiguration``, which ends ``PushClient/run(onMessage:)``: no retry
/// can make that request.
public final class URLSessionTransport: PushTransport {
    /// `scheme://host:port` of the server URL; request paths (which carry the URL's path prefix) are appended.
    private let origin: String
    private let requestTimeout: Duration
    private let session: URLSession
    private let delegate: URLSessionStreamDelegate

    /// The most bytes of a stream the data delegate holds unread (FoundationNetworking only): several times a
    /// device's whole backlog (the relay queues about 100 messages of at most 4 KiB payload each), which a stream
    /// sends at once while the handler works through it.
    static let maximumBufferedBytes = 4 << 20

    /// Creates the transport for the configuration's server URL. Opens no connection.
    ///
    /// - Parameter sessionConfiguration: The session's configuration (default `.ephemeral`: no cookies, no cache).
    ///   Timeouts are set from the client's configuration; other settings (proxies, TLS, extra headers) are kept.
    /// - Throws: ``PushClientError`` when the URL is not `http(s)://host[:port]`.
    public convenience init(
        configuration: PushClientConfiguration, sessionConfiguration: URLSessionConfiguration = .ephemeral
    ) throws {
        try self.init(configuration: configuration, sessionConfiguration: sessionConfiguration,
                      maximumBufferedBytes: Self.maximumBufferedBytes)
    }

    /// The transport with another limit on a stream's unread bytes (tests use a small one).
    init(
        configuration: PushClientConfiguration, sessionConfiguration: URLSessionConfiguration,
        maximumBufferedBytes: Int
    ) throws {
        guard var components = URLComponents(url: configuration.serverURL, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty
        else {
            throw PushClientError(code: .invalidConfiguration, message: "server URL must be http(s)://host[:port]")
        }
        components.path = ""
        components.query = nil
        components.fragment = nil
        guard let origin = components.string else {
            throw PushClientError(code: .invalidConfiguration, message: "server URL must be http(s)://host[:port]")
        }
        self.origin = origin
        self.requestTimeout = max(configuration.connectTimeout, .seconds(30))
        let sessionConfiguration = sessionConfiguration
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        sessionConfiguration.timeoutIntervalForRequest = requestTimeout.inSeconds
        // A stream lasts as long as the app runs: no limit on the whole transfer.
        sessionConfiguration.timeoutIntervalForResource = 365 * 24 * 3600
        let delegate = URLSessionStreamDelegate(maximumBufferedBytes: maximumBufferedBytes)
        self.delegate = delegate
        self.session = URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: nil)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let urlRequest = try makeRequest(request, timeout: requestTimeout)
        let task = LockedValue<URLSessionDataTask?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let dataTask = session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        continuation.resume(throwing: Self.clientError(error, timedOut: false, url: urlRequest.url))
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: TransportResponse(
                            status: response.statusCode, headerFields: Self.fields(response),
                            body: data.map { Array($0) } ?? []))
                    } else {
                        continuation.resume(throwing: PushClientError(code: .invalidResponse,
                                                                      message: "not an HTTP response"))
                    }
                }
                task.withLockedValue { $0 = dataTask }
                dataTask.resume()
            }
        } onCancel: {
            task.withLockedValue { $0?.cancel() }
        }
    }

    public func withStreamingResponse(
        to request: TransportRequest,
        idleTimeout: Duration,
        _ body: (_ head: TransportResponseHead, _ reader: TransportBodyReader) async throws -> Void
    ) async throws {
        // URLSession's own timer only backs up the watchdog, which is exact.
        let urlRequest = try makeRequest(request, timeout: idleTimeout + requestTimeout)
        let activity = StreamActivity()
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (head, reader, task) = try await open(urlRequest, activity: activity)
            defer { task.cancel() }
            group.addTask {
                await activity.watch(idleTimeout: idleTimeout) { task.cancel() }
            }
            defer { group.cancelAll() }
            try await body(head, reader)
        }
    }

    public func shutdown() async {
        session.invalidateAndCancel()
    }

    #if canImport(FoundationNetworking)
    /// The most unread bytes any stream of this transport held at once (for tests).
    var bufferedBytesHighWaterMark: Int { delegate.bufferedBytesHighWaterMark }
    #endif

    #if canImport(FoundationNetworking)
    /// Starts the request and waits for its head; the body comes through the session's data delegate.
    private func open(_ request: URLRequest, activity: StreamActivity) async throws
        -> (TransportResponseHead, TransportBodyReader, URLSessionDataTask)
    {
        let url = request.url
        let task = session.dataTask(with: request)
        let events = delegate.register(task, activity: activity)
        var iterator = events.makeAsyncIterator()
        task.resume()
        let responseHead: TransportResponseHead
        do {
            guard case .head(let head)? = try await iterator.next() else {
                throw PushClientError(code: .connectionClosed, message: "stream: closed before the response")
            }
            responseHead = head
        } catch {
            task.cancel()
            throw Self.clientError(error, timedOut: activity.timedOut, url: url)
        }
        let delegate = self.delegate
        let id = task.taskIdentifier
        let reader = TransportBodyReader {
            do {
                guard let event = try await iterator.next() else { return nil }
                guard case .chunk(let bytes) = event else { return [] }
                delegate.consumed(bytes.count, of: id)
                return bytes
            } catch {
                throw Self.clientError(error, timedOut: activity.timedOut, url: url)
            }
        }
        return (responseHead, reader, task)
    }
    #else
    /// Starts the request with `bytes(for:)`; the reader hands on what arrived up to each line end.
    private func open(_ request: URLRequest, activity: StreamActivity) async throws
        -> (TransportResponseHead, TransportBodyReader, URLSessionDataTask)
    {
        let url = request.url
        let bytes: URLSession.AsyncBytes
        let response: URLResponse
        do {
            (bytes, response) = try await session.bytes(for: request)
        } catch {
            throw Self.clientError(error, timedOut: activity.timedOut, url: url)
        }
        guard let response = response as? HTTPURLResponse else {
            bytes.task.cancel()
            throw PushClientError(code: .invalidResponse, message: "not an HTTP response")
        }
        activity.touch()
        var iterator = bytes.makeAsyncIterator()
        let reader = TransportBodyReader {
            var chunk: [UInt8] = []
            do {
                while let byte = try await iterator.next() {
                    activity.touch()
                    chunk.append(byte)
                    if byte == UInt8(ascii: "\n") || chunk.count >= 4096 { return chunk }
                }
            } catch {
                throw Self.clientError(error, timedOut: activity.timedOut, url: url)
            }
            return chunk.isEmpty ? nil : chunk
        }
        let head = TransportResponseHead(status: response.statusCode, headerFields: Self.fields(response))
        return (head, reader, bytes.task)
    }
    #endif

    private func makeRequest(_ request: TransportRequest, timeout: Duration) throws -> URLRequest {
        guard let url = URL(string: origin + request.path) else {
            throw PushClientError(code: .invalidConfiguration, message: "not a URL: \(origin)\(request.path)")
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: timeout.inSeconds)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        return urlRequest
    }

    /// URLSession's refusals of a URL it will not request at all, whatever the network: a malformed one (a port out
    /// of range, which `URLComponents` lets through and only the request finds), a scheme it has no protocol for,
    /// and, on Apple platforms, an `http` URL that App Transport Security forbids the app.
    static let refusedURLCodes: Set<URLError.Code> = [
        .badURL, .unsupportedURL, .appTransportSecurityRequiresSecureConnection,
    ]

    /// The client error for what URLSession reported on the request for `url`; a cancellation by the watchdog is a
    /// heartbeat timeout. A refusal of `url` itself (``refusedURLCodes``) is
    /// ``PushClientError/Code-swift.struct/invalidConfiguration``, which ``PushClient/run(onMessage:)`` does not
    /// retry; the same refusal of a URL a redirect led to (a captive portal's sign-in page) is a failure that may
    /// pass, as any other.
    static func clientError(_ error: any Error, timedOut: Bool, url: URL?) -> any Error {
        if timedOut {
            return PushClientError(code: .heartbeatTimeout,
                                   message: "no data or heartbeat within the heartbeat timeout")
        }
        if error is PushClientError || error is CancellationError { return error }
        if let error = error as? URLError {
            if error.code == .cancelled { return CancellationError() }
            if refusedURLCodes.contains(error.code),
               error.failingURL.map({ $0.absoluteString == url?.absoluteString }) ?? true
            {
                // Not the URL itself in the message: a server URL may carry a user and password.
                let why = "URLSession refuses the server URL (\(error.code.rawValue)): \(error.localizedDescription)"
                return PushClientError(code: .invalidConfiguration, message: why)
            }
            return PushClientError(code: .connectionClosed, message: "URLSession: \(error.localizedDescription)")
        }
        return PushClientError(code: .connectionClosed, message: "URLSession: \(error)")
    }

    /// The response's header fields (`allHeaderFields`) as `HTTPFields`; a name that is not a valid field name is
    /// left out.
    static func fields(_ response: HTTPURLResponse) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in response.allHeaderFields {
            if let text = name as? String, let name = HTTPField.Name(text), let value = value as? String {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        return fields
    }
}
