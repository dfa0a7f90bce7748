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
        await relay.close()
    }
}
