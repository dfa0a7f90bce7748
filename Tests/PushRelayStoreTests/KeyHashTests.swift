import Testing

@testable import PushRelayStore

/// The digest the store keeps for every key and secret must stay SHA-256 exactly: databases written by earlier
/// versions hold these digests, and a different one would lock every project and device out.
@Suite("Store: key hashes")
struct KeyHashTests {
    @Test("KeyHash is SHA-256 of the UTF-8 bytes (FIPS 180-2 vectors), and matches only its own digest")
    func sha256Vectors() {
        let vectors: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ]
        for (input, hex) in vectors {
            let digest = KeyHash(of: input).bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            #expect(digest == hex, "\(input)")
        }
        let hash = KeyHash(of: "server-key")
        #expect(hash.matches(KeyHash(of: "server-key").bytes))
        #expect(!hash.matches(KeyHash(of: "server-kez").bytes))
        #expect(!hash.matches(Array(hash.bytes.dropLast())))
    }
}
