import ArgumentParser
import Foundation
import Logging
import PushRelayCore
import PushRelayServer
import PushRelayStore
import PushRelayWire

/// `pushrelay project create|list|rotate-key|revoke-key|rotate-client-key|delete|service-account|service-account-keys|revoke-service-account-key`:
/// manages projects in the store directly (the store is shared with running daemons, which see changes at once).
struct ProjectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "project",
        abstract: "Create, list, rotate keys of, and delete projects.",
        subcommands: [
            Create.self, List.self, RotateKey.self, RevokeKey.self, RotateClientKey.self, Delete.self, ServiceAccountCommand.self, ServiceAccountKeys.self,
            RevokeServiceAccountKey.self,
        ]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a project and print its sender id, server key and client key (shown only once)."
        )

        @Argument(
            help: ArgumentHelp(
                "The project's name (unique): 1 to 63 letters, digits, '-', '_' and '.', starting with a letter or a "
                    + "digit; it is the FCM v1 project_id."))
        var name: String

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON: {\"project\", \"sender_id\", \"server_key\", \"client_key\"}.")
        var json = false

        func run() async throws {
            let credentials = try await store.withStore(createIfMissing: true) { try await $0.createProject(name: name) }
            if json {
                let value: JSONValue = [
                    "project": .string(credentials.project.name),
                    "sender_id": .string(String(credentials.project.senderID)),
                    "server_key": .string(credentials.serverKey),
                    "client_key": .string(credentials.clientKey),
                ]
                print(value.serializedString())
            } else {
                print("""
                    project:    \(credentials.project.name)
                    sender id:  \(credentials.project.senderID)
                    server key: \(credentials.serverKey)
                    client key: \(credentials.clientKey)

                    Keep the server key secret: senders use it (Authorization: key=<server key>). The client key ships \
                    in apps to register devices. Neither can be shown again.
                    """)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the projects.")
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print one JSON object per line.") var json = false

        func run() async throws {
            let projects = try await StoreOptions.reading(try await store.open(readOnly: true)) { try await $0.projects() }
            for project in projects {
                if json {
                    let value: JSONValue = [
                        "project": .string(project.name), "sender_id": .string(String(project.senderID)),
                    ]
                    print(value.serializedString())
                } else {
                    print("\(project.name)\t\(project.senderID)")
                }
            }
        }
    }

    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key",
            abstract: "Issue a new server key; the old one keeps working for the grace period."
        )
        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions
        // Unconditional: `--grace-seconds -5` is the value -5, refused by its check below, not a missing value
        // followed by an unknown flag.
        @Option(
            parsing: .unconditional,
            help: "How long the old key stays valid, in seconds (default: server_key_rotation_grace, 24 h).")
        var graceSeconds: Int?
        @Flag(help: "Print JSON: {\"project\", \"server_key\"}.") var json = false

        func run() async throws {
            // One read of the configuration: the store it names and, unless given, its `server_key_rotation_grace`
            // (--config's file, PUSHRELAY_SERVER_KEY_ROTATION_GRACE), as the daemon reads them.
            let configuration = try await store.configuration()
            let graceSeconds: Int
            if let explicit = self.graceSeconds {
                guard explicit >= 0 else { throw ValidationError("--grace-seconds must not be negative") }
                graceSeconds = explicit
            } else {
                graceSeconds = Int(configuration.serverKeyRotationGrace.components.seconds)
            }
            let key = try await store.withStore(configuration: configuration) {
                try await $0.rotateServerKey(project: name, gracePeriod: .seconds(graceSeconds))
            }
            if json {
                let value: JSONValue = ["project": .string(name), "server_key": .string(key)]
                print(value.serializedString())
            } else {
                print("new server key: \(key)\nthe previous key stays valid for \(graceSeconds) s")
            }
        }
    }

    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "End the grace period of the previous server keys now: only the current key authenticates.",
            discussion: """
                After a server key leaked: `rotate-key`, give every sender the new key, then `revoke-key` (or \
                `rotate-key --grace-seconds 0` to cut the old key off at once).
                """
        )
        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print JSON: {\"project\", \"revoked\"}.") var json = false

        func run() async throws {
            let revoked = try await store.withStore { try await $0.revokePreviousServerKeys(project: name) }
            if json {
                print((["project": .string(name), "revoked": .number(JSONNumber(Int64(revoked)))] as JSONValue).serializedString())
            } else {
                print("revoked \(revoked) previous server key\(revoked == 1 ? "" : "s"); only the current key is valid")
            }
        }
    }

    struct RotateClientKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-client-key",
            abstract: "Issue a new client key; the previous one stops registering devices at once.",
            discussion: """
                Devices already registered keep working: they use their own secrets. Apps that still ship the old \
                key cannot register new installs until they are updated with the new one.
                """
        )
        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print JSON: {\"project\", \"client_key\"}.") var json = false

        func run() async throws {
            let key = try await store.withStore { try await $0.rotateClientKey(project: name) }
            if json {
                print((["project": .string(name), "client_key": .string(key)] as JSONValue).serializedString())
            } else {
                print("new client key: \(key)\nthe previous client key no longer registers devices")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a project with its devices, queued messages, topic subscriptions and device groups."
        )
        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await store.open()
            let deleted = try await store.deleteProject(named: name)
            await store.close()
            guard deleted else { throw StoreOptions.refusal("no project named \(name)") }
            print("deleted project \(name)")
        }
    }
}
