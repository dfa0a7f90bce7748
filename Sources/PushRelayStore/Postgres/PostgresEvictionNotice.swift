import PushRelayCore

/// The auth flag of a commit notification whose only credential change was removing devices (unregistrations):
/// `e<epoch>,<token>|<secret hash in hex>,…`. The writer renders it; every other node's ``PostgresListener`` parses
/// it and drops just these devices from its cache (``AuthCache/evict(tokens:secrets:epoch:)``). Both sides of the
/// format are here.
struct PostgresEvictionNotice {
    var epoch: Int64
    var tokens: [String]
    var secrets: [KeyHash]

    /// The flag for `devices` removed by the commit that moved the auth epoch to `epoch`; `a` (every node clears its
    /// whole cache) when there is no epoch, a token holds a separator, or the list would not fit in a notification.
    static func flag(_ devices: [(device: Device, secret: KeyHash)], epoch: Int64?) -> String {
        guard let epoch else { return "a" }
        var flag = "e\(epoch)"
        for (device, secret) in devices {
            let token = device.token
            guard !token.contains(where: { $0 == "," || $0 == "|" || $0 == " " }) else { return "a" }
            flag += ",\(token)|" + secret.bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            if flag.utf8.count > 4_000 { return "a" }
        }
        return flag
    }

    /// Parses a flag (`e…`); nil when it is not one this format writes.
    init?(flag: Substring) {
        guard flag.first == "e" else { return nil }
        let items = flag.dropFirst().split(separator: ",")
        guard let epoch = items.first.flatMap({ Int64($0) }) else { return nil }
        var tokens: [String] = []
        var secrets: [KeyHash] = []
        for item in items.dropFirst() {
            let parts = item.split(separator: "|")
            guard parts.count == 2, let secret = Self.digest(hex: parts[1]) else { return nil }
            tokens.append(String(parts[0]))
            secrets.append(secret)
        }
        self.epoch = epoch
        self.tokens = tokens
        self.secrets = secrets
    }

    /// A SHA-256 digest from its 64 hex digits.
    private static func digest(hex: Substring) -> KeyHash? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return KeyHash(bytes: bytes)
    }
}
