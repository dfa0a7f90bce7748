/// Makes the random strings the store hands out: device tokens and secrets, server and client keys. Each carries at
/// least 128 random bits from libcrypto's CSPRNG. The formats imitate FCM's; the relay may swap the generators (for
/// the core module's token format) through ``SQLiteStore/Configuration/credentials``.
public struct CredentialGenerator: Sendable {
    /// A registration token: `<22 chars>:APA91b<134 chars>` (base64url; 16 + 100 random bytes).
    public var deviceToken: @Sendable () -> String
    /// A device secret: 43 base64url chars (32 random bytes).
    public var deviceSecret: @Sendable () -> String
    /// A server key: `AAAA<7 chars>:APA91b<134 chars>` (base64url; 5 + 100 random bytes).
    public var serverKey: @Sendable () -> String
    /// A client key: `AIza<35 chars>` (base64url; 26 random bytes), like a Firebase API key.
    public var clientKey: @Sendable () -> String

    /// Creates a generator from four functions.
    public init(
        deviceToken: @escaping @Sendable () -> String,
        deviceSecret: @escaping @Sendable () -> String,
        serverKey: @escaping @Sendable () -> String,
        clientKey: @escaping @Sendable () -> String
    ) {
        self.deviceToken = deviceToken
        self.deviceSecret = deviceSecret
        self.serverKey = serverKey
        self.clientKey = clientKey
    }

    /// The FCM-like formats described on each property.
    public static let `default` = CredentialGenerator(
        deviceToken: { randomBase64URL(bytes: 16) + ":APA91b" + randomBase64URL(bytes: 100) },
        deviceSecret: { randomBase64URL(bytes: 32) },
        serverKey: { "AAAA" + String(randomBase64URL(bytes: 6).prefix(7)) + ":APA91b" + randomBase64URL(bytes: 100) },
        clientKey: { "AIza" + String(randomBase64URL(bytes: 27).prefix(35)) }
    )

    /// `count` random bytes from libcrypto's CSPRNG, base64url without padding.
    public static func randomBase64URL(bytes count: Int) -> String {
        base64URL(CryptoRandom.bytes(count))
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// base64url without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
