import Foundation
import HTTPTypes
import NIOCore
import PushRelayHTTP
import PushRelayStore
import Testing
import TestSupport

@testable import PushRelayServer

/// docs/openapi.yaml against the relay's router, both ways, and against real answers: every documented path and
/// method reaches a route, every route is documented, and every answer below (status and content type) is one the
/// spec lists for its route. The spec is read with PyYAML (a test peer); the routes and answers come from a
/// `RelayApplication` in process.
@Suite("Routes: docs/openapi.yaml", .tags(.peer))
struct OpenAPIConformanceTests {
    /// path → method (lower case) → status (or `default`) → content types (none for an empty body).
    typealias Spec = [String: [String: [String: [String]]]]

    static func spec() async throws -> Spec {
        let script = """
            import json, sys, yaml
            spec = yaml.safe_load(open(sys.argv[1]))
            responses = spec.get("components", {}).get("responses", {})
            out = {}
            for path, item in spec["paths"].items():
                for method, operation in item.items():
                    if method not in ("get", "put", "post", "delete", "patch", "head", "options"):
                        continue
                    answers = {}
                    for status, response in operation.get("responses", {}).items():
                        if "$ref" in response:
                            response = responses[response["$ref"].split("/")[-1]]
                        answers[str(status)] = sorted(response.get("content", {}).keys())
                    out.setdefault(path, {})[method] = answers
            print(json.dumps(out))
            """
        let result = try await ChildProcess.run(
            "python3", ["-c", script, repositoryRoot + "/docs/openapi.yaml"])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Spec.self, from: Data(result.stdout.utf8))
    }

    /// A spec path with every `{name}` replaced by a sample value.
    static func concrete(_ path: String) -> String {
        path.replacing(/\{[^}]+\}/, with: "sample")
    }

    @Test("every documented path and method reaches a route, and every route is documented")
    func bothWays() async throws {
        let spec = try await Self.spec()
        let relay = try RelayHarness()
        let router = relay.relay.router
        var documented: Set<String> = []
        for (path, methods) in spec {
            for method in methods.keys {
                let head = HTTPRequest(
                    method: HTTPRequest.Method(method.uppercased())!, scheme: "http", authority: "relay.test",
                    path: Self.concrete(path))
                let pattern = router.matchedPattern(for: head)
                #expect(pattern != nil, "\(method.uppercased()) \(path) is documented but no route serves it")
                if let pattern { documented.insert("\(method.uppercased()) \(pattern)") }
            }
        }
        for route in router.routes where route.method != .head {
            #expect(documented.contains("\(route.method.rawValue) \(route.pattern)"),
                    "\(route.method.rawValue) \(route.pattern) is served but docs/openapi.yaml has no path for it")
        }
        await relay.close()
    }

    /// One real answer: the route's spec path, the request, and what to check.
    struct Probe {
        var path: String
        var method: HTTPRequest.Method
        var request: String
        var headers: HTTPFields = [:]
        var body: String = ""
    }

    @Test("answers on every route carry a status and content type that docs/openapi.yaml lists for it")
    func answersMatchTheSpec() async throws {
        let spec = try await Self.spec()
        var options = RelayApplication.Options()
        options.projectMessageRate = 2
        options.registrationRate = 2
        options.maxDevicesPerProject = 0
        let relay = try RelayHarness(options: options)
        let project = try await relay.createProject()
        let device = try await relay.registerDevice(project)
        let json: HTTPFields = [.contentType: "application/json"]
        func key(_ key: String) -> HTTPFields { json + [.authorization: "key=\(key)"] }
        let server = key(project.serverKey)
        let bearer: HTTPFields = [.authorization: "Bearer \(device.secret)", .contentType: "application/json"]
        var group = server
        group[HTTPField.Name("project_id")!] = String(project.project.senderID)
        let send = #"{"to": "\#(device.token)", "data": {"k": "v"}}"#
        let probes: [Probe] = [
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: server, body: send),
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send",
                  headers: [.authorization: "key=\(project.serverKey)", .contentType: "application/x-www-form-urlencoded"],
                  body: "registration_id=\(device.token)&data.k=v"),
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: server, body: "{nope"),
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: server,
                  body: #"{"condition": "'a' in topics &&", "data": {"k": "v"}}"#),
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: key("wrong"), body: send),
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: json, body: send),
            // The project's rate (2 a minute) is spent by now: 429.
            Probe(path: "/fcm/send", method: .post, request: "/fcm/send", headers: server, body: send),
            Probe(path: "/gcm/send", method: .post, request: "/gcm/send", headers: key("wrong"), body: send),
            Probe(path: "/v1/register", method: .post, request: "/v1/register", headers: key(project.clientKey),
                  body: #"{"project": "shop", "app": "a", "platform": "ios"}"#),
            Probe(path: "/v1/register", method: .post, request: "/v1/register", headers: key(project.clientKey), body: "[]"),
            Probe(path: "/v1/register", method: .post, request: "/v1/register", headers: key("wrong"),
                  body: #"{"project": "shop", "app": "a", "platform": "ios"}"#),
            // registration_rate 2 a minute: the harness's device and the one above spent it.
            Probe(path: "/v1/register", method: .post, request: "/v1/register", headers: key(project.clientKey),
                  body: #"{"project": "shop", "app": "a", "platform": "ios"}"#),
            Probe(path: "/v1/ack", method: .post, request: "/v1/ack", headers: bearer, body: #"{"ids": []}"#),
            Probe(path: "/v1/ack", method: .post, request: "/v1/ack", headers: bearer, body: #"{"ids": "x"}"#),
            Probe(path: "/v1/ack", method: .post, request: "/v1/ack", headers: [.authorization: "Bearer nope"],
                  body: #"{"ids": []}"#),
            Probe(path: "/v1/stream-ticket", method: .post, request: "/v1/stream-ticket", headers: bearer),
            Probe(path: "/v1/stream", method: .get, request: "/v1/stream", headers: [.authorization: "Bearer nope"]),
            Probe(path: "/token", method: .post, request: "/token",
                  headers: [.contentType: "application/x-www-form-urlencoded"], body: "grant_type=password"),
            Probe(path: "/v1/projects/{project_id}/messages:send", method: .post,
                  request: "/v1/projects/shop/messages:send", headers: json, body: "{}"),
            Probe(path: "/iid/v1:batchAdd", method: .post, request: "/iid/v1:batchAdd", headers: server,
                  body: #"{"to": "/topics/news", "registration_tokens": ["\#(device.token)"]}"#),
            Probe(path: "/iid/v1:batchAdd", method: .post, request: "/iid/v1:batchAdd", headers: server, body: "{nope"),
            Probe(path: "/iid/info/{token}", method: .get, request: "/iid/info/\(device.token)", headers: server),
            Probe(path: "/fcm/notification", method: .post, request: "/fcm/notification", headers: group,
                  body: #"{"operation": "create", "notification_key_name": "u1", "registration_ids": ["\#(device.token)"]}"#),
            Probe(path: "/fcm/notification", method: .post, request: "/fcm/notification", headers: group,
                  body: #"{"operation": "create", "notification_key_name": "u1", "registration_ids": ["\#(device.token)"]}"#),
            Probe(path: "/fcm/notification", method: .post, request: "/fcm/notification", headers: key("wrong"), body: "{}"),
            Probe(path: "/gcm/notification", method: .get, request: "/gcm/notification?notification_key_name=u1", headers: group),
            Probe(path: "/fcm/notification", method: .get, request: "/fcm/notification?notification_key_name=u2", headers: group),
            Probe(path: "/v1/projects/{resource}", method: .get, request: "/v1/projects/shop/apps/x", headers: json),
            Probe(path: "/v1/projects", method: .post, request: "/v1/projects", headers: json),
            Probe(path: "/healthz", method: .get, request: "/healthz"),
            Probe(path: "/readyz", method: .get, request: "/readyz"),
            Probe(path: "/metrics", method: .get, request: "/metrics"),
        ]
        // The status each probe is written to get, so that a probe cannot drift to another answer unnoticed.
        let statuses = [200, 200, 400, 400, 401, 401, 429, 401, 200, 400, 401, 429, 200, 400, 401, 200, 401, 400, 401,
                        200, 400, 200, 200, 400, 401, 200, 400, 501, 501, 200, 200, 200]
        #expect(statuses.count == probes.count)
        for (probe, status) in zip(probes, statuses) {
            let answer = try await relay.request(probe.method, probe.request, headers: probe.headers, body: probe.body)
            let what = "\(probe.method.rawValue) \(probe.request) → \(answer.status)"
            #expect(answer.status == status, "\(what), written to get \(status): \(answer.text.prefix(200))")
            let documented = spec[probe.path]?[probe.method.rawValue.lowercased()]
            guard let types = documented?[String(answer.status)] ?? documented?["default"] else {
                Issue.record("\(what) is not among the documented answers \(documented.map { Array($0.keys).sorted() } ?? []): \(answer.text.prefix(200))")
                continue
            }
            let type = answer.headers[.contentType].map { String($0.split(separator: ";")[0]).lowercased() }
            if let type {
                #expect(types.contains(type), "\(what) answers \(type); docs/openapi.yaml lists \(types)")
            } else {
                #expect(types.isEmpty || answer.text.isEmpty, "\(what) has no content type; the spec lists \(types)")
            }
        }
        await relay.close()
    }
}
