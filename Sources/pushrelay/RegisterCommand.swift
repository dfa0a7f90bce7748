import ArgumentParser
import Foundation
import HTTPTypes
import PushRelayCore
import PushRelayWire

/// `pushrelay register`: registers a device with a running relay, as an app would, and prints its token, secret
/// and sender id.
struct RegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a device and print its token, secret and sender id.",
        discussion: """
            POSTs /v1/register with the project's client key. The token is what senders address (`to`); the \
            secret opens the device's stream (`pushrelay listen --secret`) and is shown only once. Exits 1 when \
            the relay refuses (the answer goes to standard error).
            """
    )

    @Option(help: "The relay's base URL, e.g. http://127.0.0.1:8080 (h2c) or https://push.example.com.")
    var server: String

    @Option(help: "The project to register with.")
    var project: String

    @Option(name: .customLong("client-key"), help: "The project's client key.")
    var clientKey: String

    @Option(help: "The app identifier (bundle id or package name).")
    var app: String = "pushrelay.cli"

    @Option(help: "The platform: ios, android, web, linux, ….")
    var platform: String = "linux"

    @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file (https).")
    var caFile: String?

    @Flag(help: "Print JSON: {\"token\", \"secret\", \"sender_id\"}.")
    var json = false

    func validate() throws {
        try RelayHTTPCall.validate(server: server)
    }

    func run() async throws {
        let body: JSONValue = ["project": .string(project), "app": .string(app), "platform": .string(platform)]
        var fields = HTTPFields()
        fields[.authorization] = "key=\(clientKey)"
        fields[.contentType] = "application/json"
        let call = RelayHTTPCall(server: URL(string: server)!, caFile: caFile)
        let answer = try await call.perform(.post, path: "/v1/register", headerFields: fields, body: body.serialized())
        guard answer.status == 200, let object = try? JSONValue.parse(answer.body),
            let token = object["token"]?.stringValue, let secret = object["secret"]?.stringValue
        else {
            printToStandardError("pushrelay: registration failed: HTTP \(answer.status) \(answer.body)")
            throw ExitCode(1)
        }
        let senderID = object["sender_id"].map(\.stringOrJSONText) ?? ""
        if json {
            let value: JSONValue = [
                "token": .string(token), "secret": .string(secret), "sender_id": .string(senderID),
            ]
            print(value.serializedString())
        } else {
            print("""
                token:     \(token)
                secret:    \(secret)
                sender id: \(senderID)
                """)
        }
    }
}
