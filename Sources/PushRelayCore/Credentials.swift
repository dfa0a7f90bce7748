import PushRelayWire

/// Generators for the secrets and numbers of projects and devices. Every secret carries at least 128 random bits
/// from the OS's CSPRNG (``SecureRandom``) unless a test passes its own generator.
public enum Credentials {
    /// A device secret, the stream credential: `prd_` + 43 base64url characters (258 bits).
    public static func deviceSecret(using generator: inout some RandomNumberGenerator) -> String {
        "prd_" + Base64URL.randomString(length: 43, using: &generator)
    }

    /// A server key in FCM's look: `AAAA` + 7 characters + `:APA91b` + 134 characters (846 random bits).
    public static func serverKey(using generator: inout some RandomNumberGenerator) -> String {
        "AAAA" + Base64URL.randomString(length: 7, using: &generator) + ":APA91b"
            + Base64URL.randomString(length: 134, using: &generator)
    }

    /// A client key in the look of a Firebase API key: `AIza` + 35 base64url characters (210 random bits).
    public static func clientKey(using generator: inout some RandomNumberGenerator) -> String {
        "AIza" + Base64URL.randomString(length: 35, using: &generator)
    }

    /// A device secret from the system generator.
    public static func deviceSecret() -> String {
        var generator = SecureRandom()
        return deviceSecret(using: &generator)
    }

    /// A server key from the system generator.
    public static func serverKey() -> String {
        var generator = SecureRandom()
        return serverKey(using: &generator)
    }

    /// A client key from the system generator.
    public static func clientKey() -> String {
        var generator = SecureRandom()
        return clientKey(using: &generator)
    }

    /// Compares two secrets in time that depends only on their lengths, not on where they differ.
    public static func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }
}

extension Credentials {
    /// An OAuth 2 access token for a service account: `prat.` + 64 base64url characters (384 random bits).
    public static func accessToken() -> String {
        var generator = SecureRandom()
        return "prat." + Base64URL.randomString(length: 64, using: &generator)
    }
}
