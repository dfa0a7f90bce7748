import Foundation
import HTTPTypes
import PushRelayStore
import Testing

@testable import PushRelayServer

/// `POST /v1/register`'s body: `app` and `platform` are optional strings; another type is refused and registers
/// nothing (a device stored with an empty app would never match a `restricted_package_name`).
@Suite("Routes: registration body")
struct RegisterRouteTests {
    @Test("app and platform of another type are 400 INVALID_ARGUMENT and register nothing; absent or null are empty")
    func fieldTypes() async throws {
        let relay = try RelayHarness()
        let project = try await relay.createProject()
        let register = { (fields: String) in
            try await relay.request(
                .post, "/v1/register",
                headers: [.authorization: "key=\(project.clientKey)", .contentType: "application/json"],
                body: #"{"project":"\#(project.project.name)"\#(fields)}"#)
        }
        for fields in [#","app":5"#, #","platform":true"#, #","app":["a"]"#, #","platform":{"os":"ios"}"#] {
            let answer = try await register(fields)
            #expect(answer.status == 400, "\(fields): \(answer.text)")
            #expect(answer.text.contains("INVALID_ARGUMENT") && answer.text.contains("must be strings"), "\(answer.text)")
        }
        #expect(try await relay.store.queueStatistics().devices == 0)
        for fields in ["", #","app":null,"platform":null"#, #","app":"br.com.siecola.shop","platform":"ios""#] {
            let answer = try await register(fields)
            #expect(answer.status == 200, "\(fields): \(answer.text)")
        }
        #expect(try await relay.store.queueStatistics().devices == 3)
        // A wrong client key is challenged with the scheme this route takes (key=…), not Bearer.
        let wrongKey = try await relay.request(
            .post, "/v1/register", headers: [.authorization: "key=wrong", .contentType: "application/json"],
            body: #"{"project":"\#(project.project.name)"}"#)
        #expect(wrongKey.status == 401 && wrongKey.headers[.wwwAuthenticate] == "key", "\(wrongKey.headers)")
        await relay.close()
    }

    @Test("unregister and stream-ticket requests with a body (fetch sending {}) are served; the body is ignored, up to max_request_body_size")
    func bodiesTheRoutesDoNotNeed() async throws {
        var options = RelayApplication.Options()
        options.maxRequestBodyBytes = 1024
        let relay = try RelayHarness(options: options)
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        let headers: HTTPFields = [.authorization: "Bearer \(device.secret)", .contentType: "application/json"]
        let ticket = try await relay.request(.post, "/v1/stream-ticket", headers: headers, body: "{}")
        #expect(ticket.status == 200, "\(ticket.text)")
        let tooLarge = try await relay.request(.post, "/v1/stream-ticket", headers: headers, body: String(repeating: " ", count: 1025))
        #expect(tooLarge.status == 413, "\(tooLarge.text)")
        let unregistered = try await relay.request(.delete, "/v1/register", headers: headers, body: "{}")
        #expect(unregistered.status == 200, "\(unregistered.text)")
        #expect(try await relay.store.queueStatistics().devices == 0)
        await relay.close()
    }

    @Test("a store that cannot answer: the device and Instance ID routes answer 503 UNAVAILABLE in JSON with Retry-After, not a plain 500")
    func storeUnavailable() async throws {
        let relay = try RelayHarness()
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        await relay.store.close()
        let bearer: HTTPFields = [.authorization: "Bearer \(device.secret)", .contentType: "application/json"]
        let requests: [(HTTPRequest.Method, String, HTTPFields, String)] = [
            (.post, "/v1/register", [.authorization: "key=\(project.clientKey)", .contentType: "application/json"],
             #"{"project":"\#(project.project.name)"}"#),
            (.post, "/v1/ack", bearer, #"{"ids":["1"]}"#),
            (.post, "/v1/topics/news", bearer, ""),
            (.delete, "/v1/register", bearer, ""),
            (.post, "/iid/v1:batchAdd", [.authorization: "key=\(project.serverKey)", .contentType: "application/json"],
             #"{"to":"/topics/news","registration_tokens":["\#(device.token)"]}"#),
        ]
        for (method, path, headers, body) in requests {
            let answer = try await relay.request(method, path, headers: headers, body: body)
            #expect(answer.status == 503, "\(method) \(path): \(answer.status) \(answer.text)")
            #expect(answer.headers[.retryAfter] != nil, "\(method) \(path): \(answer.headers)")
            #expect(answer.contentType?.hasPrefix("application/json") == true && answer.text.contains("UNAVAILABLE"), "\(method) \(path): \(answer.text)")
        }
    }
}
