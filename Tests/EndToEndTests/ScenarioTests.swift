import Foundation
import TestSupport
import Testing

/// The seed scenario, end to end, with real independent clients (curl) against the real daemon.
@Suite(.serialized, .tags(.endToEnd), .hangGuard) struct ScenarioTests {
    @Test func scenarioOverHTTP1WithListenerConnected() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        #expect(device.token.contains(":APA91b"))
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        try await Task.sleep(for: .milliseconds(200))

        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let answer = try await daemon.send(body, serverKey: keys.serverKey)
        #expect(answer.status == 200)
        let id = try messageID(ofSendResponse: answer.body)

        let text = try await stream.waitFor("the event") { parseEvents($0).contains { $0.id == id } }
        let event = try #require(parseEvents(text).first { $0.id == id })
        try expectScenarioEnvelope(event.data, messageID: id, senderID: keys.senderID)
    }

    @Test func scenarioOverHTTP2PriorKnowledgeToOfflineDevice() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)

        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let answer = try await daemon.send(body, serverKey: keys.serverKey, curlFlags: ["--http2-prior-knowledge"])
        #expect(answer.status == 200)
        let id = try messageID(ofSendResponse: answer.body)

        // The device connects afterwards, over HTTP/2, and gets what was queued.
        let stream = try daemon.openStream(secret: device.secret, curlFlags: ["--http2-prior-knowledge"])
        defer { stream.stop() }
        let text = try await stream.waitFor("the queued event") { parseEvents($0).contains { $0.id == id } }
        try expectScenarioEnvelope(try #require(parseEvents(text).first { $0.id == id }).data, messageID: id, senderID: keys.senderID)
    }

    @Test func acceptedMessageSurvivesKill9BeforeDelivery() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let answer = try await daemon.send(body, serverKey: keys.serverKey)
        let id = try messageID(ofSendResponse: answer.body)

        try await daemon.kill9()
        try await daemon.start()

        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("the event after kill -9") { parseEvents($0).contains { $0.id == id } }
        try expectScenarioEnvelope(try #require(parseEvents(text).first { $0.id == id }).data, messageID: id, senderID: keys.senderID)
    }

    @Test func unacknowledgedMessageIsRedeliveredAndLastEventIDAcknowledges() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let id = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)

        let first = try daemon.openStream(secret: device.secret)
        try await first.waitFor("first delivery") { parseEvents($0).contains { $0.id == id } }
        first.stop()

        // Not acknowledged: delivered again.
        let second = try daemon.openStream(secret: device.secret)
        try await second.waitFor("redelivery") { parseEvents($0).contains { $0.id == id } }
        second.stop()

        // Last-Event-ID acknowledges it; a later message still arrives, the old one does not.
        let id2 = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)
        let third = try daemon.openStream(secret: device.secret, lastEventID: id)
        defer { third.stop() }
        let text = try await third.waitFor("the second message") { parseEvents($0).contains { $0.id == id2 } }
        #expect(!parseEvents(text).contains { $0.id == id })
    }

    @Test func ackRouteAcknowledges() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        let id = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)

        let ack = try await run("curl", [
            "-sS", "-X", "POST", "\(daemon.baseURL)/v1/ack", "-H", "Authorization: Bearer \(device.secret)",
            "-H", "Content-Type: application/json", "--data-binary", #"{"ids":["\#(id)"]}"#, "-w", "%{http_code}",
        ])
        #expect(ack.stdout.hasSuffix("200"))

        let id2 = try await messageID(ofSendResponse: daemon.send(body, serverKey: keys.serverKey).body)
        let stream = try daemon.openStream(secret: device.secret)
        defer { stream.stop() }
        let text = try await stream.waitFor("the unacknowledged one") { parseEvents($0).contains { $0.id == id2 } }
        #expect(!parseEvents(text).contains { $0.id == id })
    }

    @Test func secretOpensOnlyItsOwnStreamAndWrongKeysAreRefused() async throws {
        let daemon = try Daemon()
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)
        let wrong = try await run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(daemon.baseURL)/v1/stream",
                                     "-H", "Authorization: Bearer not-a-secret"])
        #expect(wrong.stdout == "401")
        let body = scenarioBody.replacingOccurrences(of: "TOKEN", with: device.token)
        #expect(try await daemon.send(body, serverKey: "wrong").status == 401)
        #expect(try await daemon.send(body, serverKey: keys.clientKey).status == 401)
    }
}
