import Foundation
import TestSupport
import Testing

/// FCM legacy sends from real independent senders against the daemon: curl's form-encoded variant and an existing
/// FCM sender library (pyfcm) pointed at PushRelay by its endpoint URL only. The FCM rules themselves (errors,
/// limits, TTL, collapse, the 100 limit, dry run) are tested in process: `PushRelayServerTests.SendRouteTests`.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct FCMSendTests {
    /// A started daemon with one project and one registered device.
    struct Fixture {
        let daemon: Daemon
        let keys: ProjectKeys
        let device: DeviceKeys

        init() async throws {
            daemon = try Daemon()
            try await daemon.start()
            keys = try await daemon.createProject()
            device = try await daemon.registerDevice(keys)
        }

        /// Connects, collects events until `done` holds, disconnects.
        func receive(timeout: Duration = .seconds(10), until done: @escaping ([ServerSentEvent]) -> Bool) async throws -> [ServerSentEvent] {
            let stream = try daemon.openStream(secret: device.secret)
            defer { stream.stop() }
            let text = try await stream.waitFor(timeout: timeout, "events") { done(parseEvents($0)) }
            return parseEvents(text)
        }
    }

    @Test func formEncodedPlainTextVariant() async throws {
        let f = try await Fixture()
        let result = try await run("curl", [
            "-sS", "-X", "POST", "\(f.daemon.baseURL)/fcm/send", "-H", "Authorization: key=\(f.keys.serverKey)",
            "-H", "Content-Type: application/x-www-form-urlencoded;charset=UTF-8",
            "--data-urlencode", "registration_id=\(f.device.token)", "--data-urlencode", "data.orderID=3",
        ])
        #expect(result.stdout.hasPrefix("id="))
        let id = String(result.stdout.dropFirst(3).prefix { $0.isNumber })
        let events = try await f.receive { $0.contains { $0.id == id } }
        let envelope = try jsonObject(try #require(events.first { $0.id == id }).data)
        #expect(envelope["orderID"] as? String == "3")
    }

    /// FCM's 401 without a key carries its text in the status line too (clients that print the reason phrase show
    /// it); a wrong key reads "Unauthorized"; two `Authorization` fields are refused; an empty collapse key
    /// collapses nothing.
    @Test func unauthorizedStatusLinesTwoKeysAndEmptyCollapseKey() async throws {
        let f = try await Fixture()
        let missing = try await run("curl", [
            "-sS", "-o", "/dev/null", "-D", "-", "-X", "POST", "\(f.daemon.baseURL)/fcm/send",
            "-H", "Content-Type: application/json", "-d", #"{"to": "\#(f.device.token)"}"#,
        ])
        #expect(missing.stdout.hasPrefix("HTTP/1.1 401 The request was missing an Authentication Key (FCM Token)."), "\(missing.stdout)")
        let wrong = try await run("curl", [
            "-sS", "-o", "/dev/null", "-D", "-", "-X", "POST", "\(f.daemon.baseURL)/fcm/send", "-H", "Authorization: key=AAAAwrong",
            "-H", "Content-Type: application/json", "-d", #"{"to": "\#(f.device.token)"}"#,
        ])
        #expect(wrong.stdout.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(wrong.stdout)")
        // Two credentials in one head are ambiguous (a proxy may read the other one): refused over either protocol,
        // whichever comes first, and nothing is sent.
        for (first, second) in [(f.keys.serverKey, "AAAAwrong"), ("AAAAwrong", f.keys.serverKey)] {
            for http2 in [false, true] {
                let twice = try await run("curl", [
                    "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "\(f.daemon.baseURL)/fcm/send",
                    "-H", "Authorization: key=\(first)", "-H", "Authorization: key=\(second)",
                    "-H", "Content-Type: application/json", "-d", #"{"to": "\#(f.device.token)", "data": {"n": "x"}}"#,
                ] + (http2 ? ["--http2-prior-knowledge"] : []))
                #expect(twice.stdout == "401", "http2 \(http2): \(twice.stdout) \(twice.stderr)")
            }
        }
        var ids: [String] = []
        for n in 0..<3 {
            let sent = try await f.daemon.send(
                #"{"to": "\#(f.device.token)", "collapse_key": "", "data": {"n": "\#(n)"}}"#, serverKey: f.keys.serverKey)
            #expect(sent.status == 200)
            ids.append(try #require(((try jsonObject(sent.body))["results"] as? [[String: Any]])?.first?["message_id"] as? String))
        }
        let events = try await f.receive { events in ids.allSatisfy { id in events.contains { $0.id == id } } }
        #expect(ids.allSatisfy { id in events.contains { $0.id == id } }, "all three are kept: \(events.map(\.id))")
        #expect(events.count == 3, "the doubly authorized sends were not queued: \(events.map(\.data))")
    }

    /// `/fcm/%73end` is `/fcm/send` (RFC 3986: escapes of unreserved characters are equivalent to the characters),
    /// over either protocol; an escaped `/` is no separator.
    @Test func escapedUnreservedCharactersInThePath() async throws {
        let f = try await Fixture()
        for http2 in [false, true] {
            let sent = try await run("curl", [
                "-sS", "-w", "\n%{http_code}", "-X", "POST", "\(f.daemon.baseURL)/%66cm/%73%65nd",
                "-H", "Authorization: key=\(f.keys.serverKey)", "-H", "Content-Type: application/json",
                "-d", #"{"to": "\#(f.device.token)", "data": {"n": "escaped"}}"#,
            ] + (http2 ? ["--http2-prior-knowledge"] : []))
            #expect(sent.stdout.hasSuffix("\n200"), "http2 \(http2): \(sent.stdout) \(sent.stderr)")
            #expect(sent.stdout.contains(#""success":1"#), "http2 \(http2): \(sent.stdout)")
        }
        let slash = try await run("curl", [
            "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "\(f.daemon.baseURL)/fcm%2Fsend",
            "-H", "Authorization: key=\(f.keys.serverKey)", "-H", "Content-Type: application/json",
            "-d", #"{"to": "\#(f.device.token)"}"#,
        ])
        #expect(slash.stdout == "404", "\(slash.stdout) \(slash.stderr)")
    }

    @Test func existingFCMSenderLibraryWorksByEndpointURLOnly() async throws {
        let f = try await Fixture()
        let script = """
            import json, sys
            from pyfcm import FCMNotification
            base, key, token = sys.argv[1], sys.argv[2], sys.argv[3]
            FCMNotification.FCM_END_POINT = base + "/fcm/send"
            push = FCMNotification(api_key=key)
            result = push.notify_single_device(
                registration_id=token, message_title="Provedor de Mensagens", message_body="Status do pedido",
                extra_notification_kwargs={"orderInfo": {"infoReason": "Status de pedido", "orderID": 3,
                    "userEmail": "matilde@siecola.com.br", "newOrderStatus": "Novo pedido"}},
                content_available=True)
            print(json.dumps(result))
            """
        let sent = try await run("python3", ["-c", script, f.daemon.baseURL, f.keys.serverKey, f.device.token])
        #expect(sent.status == 0, "\(sent.stderr)")
        let answer = try jsonObject(sent.stdout)
        #expect(answer["success"] as? Int == 1)
        let id = try #require((answer["results"] as? [[String: Any]])?.first?["message_id"] as? String)
        let events = try await f.receive { $0.contains { $0.id == id } }
        try expectScenarioEnvelope(try #require(events.first { $0.id == id }).data, messageID: id, senderID: f.keys.senderID)

        // Removed from PushRelay: the library sees NotRegistered.
        _ = try await run("curl", ["-s", "-X", "DELETE", "\(f.daemon.baseURL)/v1/register", "-H", "Authorization: Bearer \(f.device.secret)"])
        let again = try await run("python3", ["-c", script, f.daemon.baseURL, f.keys.serverKey, f.device.token])
        let failed = try jsonObject(again.stdout)
        #expect(failed["failure"] as? Int == 1)
        #expect((failed["results"] as? [[String: Any]])?.first?["error"] as? String == "NotRegistered")
    }
}
