import PushRelayWire
import Foundation
import HTTPTypes
import Logging
import Testing

@testable import PushRelayClient
@testable import PushRelayClientNIO

@Suite("Configuration and relay API")
struct ConfigurationTests {
    private let url = URL(string: "http://127.0.0.1:8080/relay/")!
    private let registration = PushClientConfiguration.Registration(project: "shop", app: "app", clientKey: "ck")

    @Test("every field keeps what it was given, and the defaults are the documented ones")
    func fields() throws {
        let defaults = PushClientConfiguration(serverURL: url, registration: registration)
        #expect(defaults.serverURL == url)
        #expect(defaults.registration == registration)
        #expect(defaults.registration?.platform == "linux")
        #expect(defaults.credentials == nil && defaults.credentialsFile == nil)
        #expect(defaults.backoff == BackoffPolicy())
        #expect(defaults.heartbeatTimeout == .seconds(60))
        #expect(defaults.connectTimeout == .seconds(10))
        #expect(defaults.deduplicationCapacity == 1024)
        #expect(defaults.deduplicationFile == nil)
        let backoff = BackoffPolicy()
        #expect(backoff.base == .milliseconds(500) && backoff.maximum == .seconds(30) && backoff.multiplier == 2)
        #expect(backoff.jitter == .full && backoff.stableAfter == .seconds(30) && backoff.maximumAttempts == nil)

        let file = URL(fileURLWithPath: "/tmp/x.json")
        let credentials = PushCredentials(token: "t", secret: "s", senderID: "1")
        let full = PushClientConfiguration(
            serverURL: url, registration: nil, credentials: credentials, credentialsFile: file,
            backoff: BackoffPolicy(base: .seconds(1), maximum: .seconds(2), multiplier: 3, jitter: .none,
                                   stableAfter: .seconds(4), maximumAttempts: 5),
            heartbeatTimeout: .seconds(6), connectTimeout: .seconds(7), deduplicationCapacity: 8,
            deduplicationFile: file)
        #expect(full.registration == nil && full.credentials == credentials && full.credentialsFile == file)
        #expect(full.backoff == BackoffPolicy(base: .seconds(1), maximum: .seconds(2), multiplier: 3, jitter: .none,
                                              stableAfter: .seconds(4), maximumAttempts: 5))
        #expect(full.heartbeatTimeout == .seconds(6) && full.connectTimeout == .seconds(7))
        #expect(full.deduplicationCapacity == 8 && full.deduplicationFile == file)
    }

    @Test("the transport refuses unusable URLs and https without TLS")
    func transportURLs() throws {
        #expect(throws: PushClientError.self) {
            try HTTP1Transport(configuration: PushClientConfiguration(
                serverURL: URL(string: "ftp://host")!, registration: registration))
        }
        #expect { try HTTP1Transport(configuration: PushClientConfiguration(
            serverURL: URL(string: "https://host")!, registration: registration))
        } throws: { ($0 as? PushClientError)?.code == .tlsNotConfigured }
        let transport = try HTTP1Transport(configuration: PushClientConfiguration(
            serverURL: URL(string: "http://[::1]:9000")!, registration: registration))
        #expect(transport.host == "::1" && transport.port == 9000)
    }

    @Test("requests: paths under the URL's prefix, the client key header, the bearer secret, Last-Event-ID")
    func requests() throws {
        let api = RelayAPI(serverURL: url)
        let register = api.registerRequest(registration)
        #expect(register.method == .post && register.path == "/relay/v1/register")
        #expect(register.headerFields[.authorization] == "key=ck")
        #expect(try JSON.parse(Data(register.body ?? [])) == ["project": "shop", "app": "app", "platform": "linux"])

        let stream = api.streamRequest(secret: "s", lastEventID: "42")
        #expect(stream.method == .get && stream.path == "/relay/v1/stream")
        #expect(stream.headerFields[.authorization] == "Bearer s")
        #expect(stream.headerFields[HTTPField.Name("Last-Event-ID")!] == "42")
        #expect(api.streamRequest(secret: "s", lastEventID: nil).headerFields[HTTPField.Name("Last-Event-ID")!] == nil)

        let ack = api.acknowledgeRequest(ids: ["1", "2"], secret: "s")
        #expect(ack.path == "/relay/v1/ack" && ack.headerFields[.authorization] == "Bearer s")
        #expect(try JSON.parse(Data(ack.body ?? [])) == ["ids": ["1", "2"]])
        #expect(api.unregisterRequest(secret: "s").method == .delete)
    }

    @Test("answers: credentials with a numeric sender id; status codes map to error codes")
    func answers() throws {
        let api = RelayAPI(serverURL: url)
        let body = Array(#"{"token":"t","secret":"s","sender_id":19283323559}"#.utf8)
        #expect(try api.registration(from: TransportResponse(status: 200, headerFields: [:], body: body))
            == PushCredentials(token: "t", secret: "s", senderID: "19283323559"))
        #expect(throws: PushClientError.self) {
            try api.registration(from: TransportResponse(status: 200, headerFields: [:], body: Array("{}".utf8)))
        }
        for (status, code) in [(401, PushClientError.Code.unauthorized), (403, .unauthorized), (404, .notFound),
                               (410, .notRegistered), (500, .httpStatus)] {
            #expect { try RelayAPI.check(status, headerFields: [:], body: [], operation: "x") } throws: {
                ($0 as? PushClientError)?.code == code && ($0 as? PushClientError)?.status == status
            }
        }
    }

    /// audit-i: the relay's message was dropped (a wrong secret and a used ticket read alike), and a 404 from a
    /// wrong URL was reported as an unregistered device.
    @Test("errors keep the relay's message; a 404 is a wrong URL, not an unregistered device")
    func errorText() {
        let body = Array(#"{"error":"UNAUTHENTICATED","message":"unknown device secret"}"#.utf8)
        #expect { try RelayAPI.check(401, headerFields: [:], body: body, operation: "stream") } throws: {
            ($0 as? PushClientError)?.message == "stream: refused (401): UNAUTHENTICATED (unknown device secret)"
        }
        #expect {
            try RelayAPI.check(404, headerFields: [:], body: Array("not found".utf8), operation: "stream")
        } throws: {
            ($0 as? PushClientError)?.message == "stream: not found (404): is the server URL a relay's?"
        }
    }

    @Test("a 200 whose body is not an event stream is refused at its first bytes")
    func eventStreamStart() throws {
        try PushClient.checkEventStreamStart(Array(": connected\n\n".utf8))
        try PushClient.checkEventStreamStart(Array("id: 1\ndata: {}\n\n".utf8))
        #expect { try PushClient.checkEventStreamStart(Array("<html>hello</html>".utf8)) } throws: {
            ($0 as? PushClientError)?.code == .invalidResponse
        }
        #expect(throws: PushClientError.self) { try PushClient.checkEventStreamStart(Array("{\"error\":1}".utf8)) }
    }

    @Test("a 200 whose Content-Type is not text/event-stream is refused naming the type; none at all is let through")
    func eventStreamContentType() throws {
        try PushClient.checkEventStreamContentType([.contentType: "text/event-stream"])
        try PushClient.checkEventStreamContentType([.contentType: "Text/Event-Stream ; charset=utf-8"])
        try PushClient.checkEventStreamContentType([:])  // Missing: the first bytes are still checked.
        try PushClient.checkEventStreamContentType([.contentType: ""])
        for type in ["text/html; charset=utf-8", "application/json", "text/plain", "text/event-streams"] {
            #expect { try PushClient.checkEventStreamContentType([.contentType: type]) } throws: { error in
                guard let error = error as? PushClientError else { return false }
                return error.code == .invalidResponse && error.message.contains("\"\(type)\"")
            }
        }
        var twice = HTTPFields()
        twice.append(HTTPField(name: .contentType, value: "text/event-stream"))
        twice.append(HTTPField(name: .contentType, value: "text/html"))
        #expect(throws: PushClientError.self) { try PushClient.checkEventStreamContentType(twice) }
    }

    @Test("the client loads its credentials file at creation")
    func credentialsFileAtCreation() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("device.json")
        try PushCredentials(token: "t", secret: "s").save(to: file)
        var configuration = PushClientConfiguration(serverURL: url, registration: registration)
        configuration.credentialsFile = file
        let client = try PushClient(configuration: configuration, logger: Logger(label: "test"))
        #expect(client.credentials == PushCredentials(token: "t", secret: "s"))
    }
}
