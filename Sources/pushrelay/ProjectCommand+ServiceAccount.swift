import ArgumentParser
import Foundation
import PushRelayCore
import PushRelayWire
import PushRelayCrypto
import PushRelayServer
import PushRelayStore

extension ProjectCommand {
    /// `pushrelay project service-account NAME [--out FILE] [--json]`: a new service-account key file for FCM HTTP v1
    /// senders. The RSA-2048 key is generated here; the store keeps only its public half.
    struct ServiceAccountCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "service-account",
            abstract: "Write a new service-account key file (Google's format) for FCM HTTP v1 senders.",
            discussion: """
                The file holds the only copy of the private key: PushRelay keeps the public key. Its token_uri is \
                <public_url>/token: --public-url, else public_url of the configuration (--config, PUSHRELAY_CONFIG, \
                PUSHRELAY_PUBLIC_URL), else the first listen address. A project may hold several keys; list them \
                with service-account-keys and revoke one with revoke-service-account-key.
                """
        )

        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions
        @Option(help: "Write the file here (mode 0600) instead of standard output.") var out: String?
        @Option(help: "The relay's public base URL, e.g. https://push.example.com (default: from the configuration).")
        var publicURL: String?
        @Flag(help: "Print a JSON summary {\"project\", \"private_key_id\", \"client_email\", \"file\"} (with --out).")
        var json = false

        func run() async throws {
            // One read of the configuration: the store it names and, unless given, its public_url (else listen).
            let configuration = try await store.configuration()
            let baseURL = publicURL ?? configuration.effectivePublicURL()
            let key = try RSAPrivateKey.generate()
            let publicPEM = try key.publicKey.pem
            let keyID = ServiceAccountFile.newPrivateKeyID()
            let email = ServiceAccountFile.clientEmail(project: name)
            _ = try await store.withStore(configuration: configuration) {
                try await $0.addServiceAccountKey(project: name, keyID: keyID, clientEmail: email, publicKeyPEM: publicPEM)
            }
            let file = ServiceAccountFile(
                projectID: name, privateKeyID: keyID, privateKey: key.pkcs8PEM, clientEmail: email,
                clientID: ServiceAccountFile.newClientID(), tokenURI: ServiceAccountFile.tokenURI(publicURL: baseURL))
            let text = Self.pretty(file.json)
            guard let out else {
                print(text)
                return
            }
            guard FileManager.default.createFile(
                atPath: out, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("cannot write \(out)") }
            if json {
                let summary: JSONValue = [
                    "project": .string(name), "private_key_id": .string(keyID), "client_email": .string(email),
                    "file": .string(out), "token_uri": .string(file.tokenURI),
                ]
                print(summary.serializedString())
            } else {
                print("""
                    wrote \(out): service account \(email), key \(keyID), token_uri \(file.tokenURI)
                    It holds the only copy of the private key: keep it secret.
                    """)
            }
        }

        /// The file with one key per line, as Google's files are written (the JSON writer is compact).
        static func pretty(_ value: JSONValue) -> String {
            guard case .object(let object) = value else { return value.serializedString() }
            let lines = object.entries.map { "  " + JSONValue.string($0.key).serializedString() + ": " + $0.value.serializedString() }
            return "{\n" + lines.joined(separator: ",\n") + "\n}"
        }
    }

    /// `pushrelay project service-account-keys NAME`: the project's service-account keys.
    struct ServiceAccountKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "service-account-keys", abstract: "List a project's service-account keys (revoked ones too).")
        @Argument(help: "The project's name.") var name: String
        @OptionGroup var store: StoreOptions
        @Flag(help: "Print one JSON object per line.") var json = false

        func run() async throws {
            let keys = try await StoreOptions.reading(try await store.open(readOnly: true)) {
                try await $0.serviceAccountKeys(project: name)
            }
            let format = ISO8601DateFormatter()
            for key in keys {
                let state = key.revokedAt.map { "revoked \(format.string(from: $0))" } ?? "valid"
                if json {
                    var value: JSONValue = [
                        "private_key_id": .string(key.id), "client_email": .string(key.clientEmail),
                        "created": .string(format.string(from: key.createdAt)),
                    ]
                    if case .object(var object) = value {
                        object["revoked"] = key.revokedAt.map { .string(format.string(from: $0)) } ?? .null
                        value = .object(object)
                    }
                    print(value.serializedString())
                } else {
                    print("\(key.id)\t\(key.clientEmail)\t\(format.string(from: key.createdAt))\t\(state)")
                }
            }
        }
    }

    /// `pushrelay project revoke-service-account-key NAME KEY_ID`.
    struct RevokeServiceAccountKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-service-account-key",
            abstract: "Revoke a service-account key: it signs no more grants and its access tokens stop working at once.")
        @Argument(help: "The project's name.") var name: String
        @Argument(help: "The key's private_key_id.") var keyID: String
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await store.open()
            let revoked = try await store.revokeServiceAccountKey(project: name, keyID: keyID)
            await store.close()
            guard revoked else { throw ValidationError("project \(name) has no valid key \(keyID)") }
            print("revoked service-account key \(keyID) of \(name)")
        }
    }
}
