import Foundation
import HTTPTypes
import PushRelayCore
import PushRelayStore
import Testing

@testable import PushRelayServer

/// FCM's device groups in process: `/fcm/notification` (create, add, remove, the key of a name) with its
/// credentials and `{"error": …}` answers, refusals that change nothing, and sends to a group's key on `/fcm/send` and
/// FCM HTTP v1, as a sender and the members' streams see them. The daemon with curl and Python senders:
/// `EndToEndTests.DeviceGroupTests`.
@Suite("Routes: device groups")
struct DeviceGroupRouteTests {
    static let projectID = HTTPField.Name("project_id")!

    /// A relay with one project and three registered devices.
    struct Fixture {
        let relay: RelayHarness
        let project: ProjectCredentials
        let devices: [TestDevice]
        var key: String { project.serverKey }
        var senderID: String { String(project.project.senderID) }

        init(options: RelayApplication.Options = RelayApplication.Options()) async throws {
            relay = try RelayHarness(options: options)
            project = try await relay.createProject()
            devices = try await relay.registerDevices(project, count: 3)
        }

        /// The headers FCM requires: the server key and the sender id.
        var headers: HTTPFields {
            [.authorization: "key=\(key)", DeviceGroupRouteTests.projectID: senderID, .contentType: "application/json"]
        }

        /// `POST /fcm/notification` with `headers` (the project's by default).
        func change(_ body: String, headers: HTTPFields? = nil) async throws -> RelayHarness.Answer {
            try await relay.request(.post, "/fcm/notification", headers: headers ?? self.headers, body: body)
        }

        /// `create` of `name` with these tokens; the new key.
        func create(_ name: String, _ tokens: [String]) async throws -> String {
            let answer = try await change(
                #"{"operation": "create", "notification_key_name": "\#(name)", "registration_ids": \#(list(tokens))}"#)
            #expect(answer.status == 200, "\(answer.text)")
            return try #require(try answer.json()["notification_key"] as? String, "\(answer.text)")
        }

        /// `GET /fcm/notification?notification_key_name=…`.
        func lookUp(_ name: String, headers: HTTPFields? = nil) async throws -> RelayHarness.Answer {
            let query = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
            return try await relay.request(
                .get, "/fcm/notification?notification_key_name=\(query)", headers: headers ?? self.headers)
        }

        /// The tokens of the group's members as the store holds them (nil: no group).
        func members(_ key: String) async throws -> [String]? {
            try await relay.store.deviceGroup(notificationKey: key)?.members.map(\.token)
        }

        func close() async { await relay.close() }
    }

    static func list(_ tokens: [String]) -> String { "[" + tokens.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }

    @Test("create, add, remove and look up with FCM's headers and answers; a group goes with its last member")
    func lifecycle() async throws {
        let f = try await Fixture()
        let (a, b, c) = (f.devices[0].token, f.devices[1].token, f.devices[2].token)
        let key = try await f.create("appUser-Chris", [a, b])
        #expect(NotificationKey.isWellFormed(key) && !RegistrationToken.isWellFormed(key))
        let found = try await f.lookUp("appUser-Chris")
        #expect(found.status == 200 && found.contentType?.hasPrefix("application/json") == true)
        #expect(found.text == #"{"notification_key":"\#(key)"}"#, "\(found.text)")

        let added = try await f.change(
            #"{"operation": "add", "notification_key_name": "appUser-Chris", "notification_key": "\#(key)", "registration_ids": ["\#(c)"]}"#)
        #expect(try added.status == 200 && added.json()["notification_key"] as? String == key, "\(added.text)")
        #expect(try await f.members(key) == [a, b, c])
        let removed = try await f.change(
            #"{"operation": "remove", "notification_key": "\#(key)", "registration_ids": ["\#(a)", "\#(b)"]}"#)
        #expect(try removed.status == 200 && removed.json()["notification_key"] as? String == key, "\(removed.text)")
        #expect(try await f.members(key) == [c])

        // The old GCM path is the same API.
        let gcm = try await f.relay.request(
            .post, "/gcm/notification", headers: f.headers,
            body: #"{"operation": "remove", "notification_key": "\#(key)", "registration_ids": ["\#(c)"]}"#)
        #expect(gcm.status == 200, "\(gcm.text)")
        #expect(try await f.members(key) == nil)
        let gone = try await f.lookUp("appUser-Chris")
        #expect(gone.status == 400 && gone.text == #"{"error":"notification_key not found"}"#, "\(gone.text)")
        let addToGone = try await f.change(
            #"{"operation": "add", "notification_key": "\#(key)", "registration_ids": ["\#(a)"]}"#)
        #expect(addToGone.text == #"{"error":"notification_key not found"}"#)
        await f.close()
    }

    @Test("every refusal has its status and {\"error\"} text, and changes nothing")
    func refusalsChangeNothing() async throws {
        let f = try await Fixture()
        let other = try await f.relay.createProject("other")
        let foreign = try await f.relay.registerDevice(other)
        let (a, b, c) = (f.devices[0].token, f.devices[1].token, f.devices[2].token)
        let key = try await f.create("u1", [a, b])
        let unknown = RegistrationToken.generate().rawValue
        var twentyOne = [a, b, c]
        twentyOne += try await f.relay.registerDevices(f.project, count: 18).map(\.token)
        let create = { (name: String, tokens: [String]) in
            #"{"operation": "create", "notification_key_name": "\#(name)", "registration_ids": \#(Self.list(tokens))}"#
        }
        let add = { (tokens: [String]) in
            #"{"operation": "add", "notification_key": "\#(key)", "registration_ids": \#(Self.list(tokens))}"#
        }
        let cases: [(body: String, headers: HTTPFields?, status: Int, error: String)] = [
            (create("u2", [c]), [.contentType: "application/json", Self.projectID: f.senderID], 401, "UNAUTHENTICATED"),
            (create("u2", [c]), [.authorization: "key=wrong", Self.projectID: f.senderID], 401, "UNAUTHENTICATED"),
            (create("u2", [c]), [.authorization: "key=\(f.key)"], 400, "INVALID_PROJECT_ID"),
            (create("u2", [c]), [.authorization: "key=\(f.key)", Self.projectID: String(other.project.senderID)], 400,
             "INVALID_PROJECT_ID"),
            (create("u2", [c]), [.authorization: "key=\(other.serverKey)", Self.projectID: f.senderID], 400, "INVALID_PROJECT_ID"),
            ("{nope", nil, 400, "JSON_PARSING_ERROR: Unexpected character (n) at position 1."),
            (create("u1", [c]), nil, 400, "notification_key already exists"),
            (create("u2", []), nil, 400, #""registration_ids" field cannot be empty"#),
            (create("u2", ["nope"]), nil, 400, "no valid registration ids"),
            (create("u2", [c, unknown]), nil, 400, "registration id not registered (NotRegistered): \(unknown)"),
            (create("u2", [c, foreign.token]), nil, 400, "registration id of another project (MismatchSenderId): \(foreign.token)"),
            (create("u2", twentyOne), nil, 400, "too many registration ids: a device group has at most 20 members"),
            (add(Array(twentyOne[1...])), nil, 400, "too many registration ids: a device group has at most 20 members"),
            (add([foreign.token]), nil, 400, "registration id of another project (MismatchSenderId): \(foreign.token)"),
            (#"{"operation": "add", "notification_key_name": "u9", "notification_key": "\#(key)", "registration_ids": ["\#(c)"]}"#,
             nil, 400, "notification_key_name does not match notification_key"),
            (#"{"operation": "add", "notification_key": "\#(a)", "registration_ids": ["\#(c)"]}"#, nil, 400, "notification_key not found"),
            (#"{"operation": "remove", "notification_key": "\#(key)", "registration_ids": ["\#(foreign.token)"]}"#, nil, 400,
             "registration id of another project (MismatchSenderId): \(foreign.token)"),
            (#"{"operation": "rename", "registration_ids": ["\#(c)"]}"#, nil, 400, #"invalid operation: must be "create", "add" or "remove""#),
        ]
        for (body, headers, status, error) in cases {
            let answer = try await f.change(body, headers: headers)
            #expect(answer.status == status, "\(body.prefix(100)): \(answer.text)")
            #expect(answer.contentType?.hasPrefix("application/json") == true)
            let json = try answer.json()
            #expect(json.count == 1 && json["error"] as? String == error, "\(body.prefix(100)): \(answer.text)")
        }
        // Nothing changed: the one group, with its two members; no other name.
        #expect(try await f.members(key) == [a, b])
        #expect(try await f.lookUp("u2").text == #"{"error":"notification_key not found"}"#)
        // Another project's group is not found with this project's key, and its name looks up nothing here.
        let otherHeaders: HTTPFields = [.authorization: "key=\(other.serverKey)", Self.projectID: String(other.project.senderID)]
        let otherAdd = try await f.change(add([foreign.token]), headers: otherHeaders)
        #expect(otherAdd.text == #"{"error":"notification_key not found"}"#)
        #expect(try await f.lookUp("u1", headers: otherHeaders).status == 400)
        // The look-up's own refusals.
        #expect(try await f.lookUp("u1", headers: [Self.projectID: f.senderID]).status == 401)
        #expect(try await f.lookUp("u1", headers: [.authorization: "key=\(f.key)"]).text == #"{"error":"INVALID_PROJECT_ID"}"#)
        let noName = try await f.relay.request(.get, "/fcm/notification", headers: f.headers)
        #expect(noName.status == 400 && noName.text == #"{"error":"notification_key_name is required"}"#)
        await f.close()
    }

    @Test("a v1 access token with access_token_auth: true manages groups as the server key does")
    func accessTokenAuth() async throws {
        let f = try await Fixture()
        try await f.relay.issueAccessToken("groups-token", for: f.project, keyID: "groups")
        var headers: HTTPFields = [
            .authorization: "Bearer groups-token", Self.projectID: f.senderID, ServerCredentials.accessTokenAuth: "true",
        ]
        let body = #"{"operation": "create", "notification_key_name": "v1", "registration_ids": ["\#(f.devices[0].token)"]}"#
        let created = try await f.change(body, headers: headers)
        #expect(created.status == 200, "\(created.text)")
        #expect(try await f.lookUp("v1", headers: headers).status == 200)
        headers[ServerCredentials.accessTokenAuth] = nil
        #expect(try await f.lookUp("v1", headers: headers).status == 401)
        await f.close()
    }

    @Test("a send to the key reaches every member's stream, once, and answers FCM's group form")
    func sendReachesTheMembers() async throws {
        let f = try await Fixture()
        let members = Array(f.devices[0..<2])
        let key = try await f.create("family", members.map(\.token))
        let streams = try await members.asyncMap { try await f.relay.openStream(secret: $0.secret) }
        defer { streams.forEach { $0.close() } }
        let bystander = try await f.relay.openStream(secret: f.devices[2].secret)
        defer { bystander.close() }

        let answer = try await f.relay.send(
            #"{"to": "\#(key)", "collapse_key": "order", "time_to_live": 600, "data": {"orderID": "3"}}"#, key: f.key)
        #expect(answer.status == 200 && answer.text == #"{"success":2,"failure":0}"#, "\(answer.text)")
        for stream in streams {
            let events = try await stream.waitForEvents("the group's message") { $0.contains { $0.data.contains("orderID") } }
            let message = try #require(events.first { $0.data.contains("orderID") })
            let envelope = try message.json()
            #expect(envelope["orderID"] as? String == "3" && envelope["collapse_key"] as? String == "order")
            #expect(envelope["google.c.sender.id"] as? String == f.senderID && envelope["from"] as? String == f.senderID)
        }
        // Each member got its own copy, with its own id; the bystander got none (a marker shows what it has).
        let ids = try streams.map { try #require($0.events.first { $0.data.contains("orderID") }?.id) }
        #expect(Set(ids).count == 2)
        let marker = try await f.relay.messageID(#"{"to": "\#(f.devices[2].token)", "data": {"m": "1"}}"#, key: f.key)
        let quiet = try await bystander.waitForEvents("the marker") { $0.contains { $0.id == marker } }
        #expect(!quiet.contains { $0.data.contains("orderID") })
        // The deprecated notification_key field addresses the group as well; a dry run delivers nothing.
        let dry = try await f.relay.send(#"{"notification_key": "\#(key)", "dry_run": true}"#, key: f.key)
        #expect(dry.text == #"{"success":2,"failure":0}"#, "\(dry.text)")
        await f.close()
    }

    @Test("members that fail are named in failed_registration_ids; a key that fails whole answers as one token")
    func failures() async throws {
        var options = RelayApplication.Options()
        options.deviceMessageRate = 1
        let f = try await Fixture(options: options)
        let shop = try await f.relay.registerDevice(f.project, app: "com.shop")
        let other = try await f.relay.registerDevice(f.project, app: "com.other")
        let key = try await f.create("mixed", [shop.token, other.token])
        let restricted = try await f.relay.send(
            #"{"to": "\#(key)", "restricted_package_name": "com.shop", "data": {"k": "v"}}"#, key: f.key)
        #expect(restricted.text == #"{"success":1,"failure":1,"failed_registration_ids":["\#(other.token)"]}"#)
        // shop spent its one message a minute: past the device rate it fails too.
        let rate = try await f.relay.send(#"{"to": "\#(key)", "data": {"k": "v"}}"#, key: f.key)
        #expect(rate.text == #"{"success":1,"failure":1,"failed_registration_ids":["\#(shop.token)"]}"#)

        // Before the members are known: the token form, with the reason.
        let unknown = NotificationKey.generate().rawValue
        let cases: [(String, String)] = [
            (#"{"to": "\#(unknown)"}"#, "NotRegistered"),
            (#"{"to": "\#(key)", "time_to_live": -1}"#, "InvalidTtl"),
            (#"{"to": "\#(key)", "data": {"from": "x"}}"#, "InvalidDataKey"),
            (#"{"to": "\#(key)", "data": {"k": "\#(String(repeating: "v", count: 4096))"}}"#, "MessageTooBig"),
        ]
        for (body, error) in cases {
            let answer = try await f.relay.send(body, key: f.key)
            #expect(answer.status == 200, "\(answer.text)")
            let json = try answer.json()
            #expect(json["multicast_id"] != nil && json["failure"] as? Int == 1, "\(answer.text)")
            #expect((json["results"] as? [[String: Any]])?.first?["error"] as? String == error, "\(answer.text)")
        }
        let stranger = try await f.relay.createProject("stranger")
        let mismatch = try await f.relay.results(#"{"to": "\#(key)"}"#, key: stranger.serverKey)
        #expect(mismatch.first?["error"] as? String == "MismatchSenderId")
        await f.close()
    }

    @Test("an unregistered member leaves its groups; the last one's going deletes the group (NotRegistered)")
    func unregisteredMembersLeave() async throws {
        let f = try await Fixture()
        let (a, b) = (f.devices[0], f.devices[1])
        let key = try await f.create("pair", [a.token, b.token])
        for (device, answer) in [(a, #"{"success":1,"failure":0}"#), (b, nil)] {
            let delete = try await f.relay.request(.delete, "/v1/register", headers: [.authorization: "Bearer \(device.secret)"])
            #expect(delete.status == 200)
            let sent = try await f.relay.send(#"{"to": "\#(key)", "data": {"k": "v"}}"#, key: f.key)
            if let answer {
                #expect(sent.text == answer, "\(sent.text)")
            } else {
                #expect((try sent.json()["results"] as? [[String: Any]])?.first?["error"] as? String == "NotRegistered")
            }
        }
        #expect(try await f.lookUp("pair").status == 400)
        await f.close()
    }

    @Test("FCM HTTP v1: the key in message.token sends to every member and answers one name")
    func v1SendsToTheGroup() async throws {
        let f = try await Fixture()
        try await f.relay.issueAccessToken("v1-token", for: f.project, keyID: "v1")
        let headers: HTTPFields = [.authorization: "Bearer v1-token", .contentType: "application/json"]
        let path = "/v1/projects/\(f.project.project.name)/messages:send"
        let members = Array(f.devices[0..<2])
        let key = try await f.create("v1-group", members.map(\.token))
        let answer = try await f.relay.request(
            .post, path, headers: headers, body: #"{"message": {"token": "\#(key)", "data": {"v1": "yes"}}}"#)
        #expect(answer.status == 200, "\(answer.text)")
        let name = try #require(try answer.json()["name"] as? String)
        let id = String(name.dropFirst("projects/shop/messages/".count))
        var ids: [String] = []
        for member in members {
            let stream = try await f.relay.openStream(secret: member.secret)
            let events = try await stream.waitForEvents("the v1 message") { $0.contains { $0.data.contains("v1") } }
            ids += events.compactMap(\.id)
            stream.close()
        }
        #expect(ids.contains(id), "the name is one member's copy: \(name) \(ids)")
        let unknown = try await f.relay.request(
            .post, path, headers: headers, body: #"{"message": {"token": "\#(NotificationKey.generate().rawValue)"}}"#)
        #expect(unknown.status == 404 && unknown.text.contains("UNREGISTERED"), "\(unknown.text)")
        await f.close()
    }
}

extension Array {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
