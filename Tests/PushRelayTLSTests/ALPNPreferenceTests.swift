import Testing

@testable import PushRelayTLS

@Suite("ALPN preference")
struct ALPNPreferenceTests {
    private func select(_ server: [String], offered: [String]) throws -> String? {
        let preference = try ALPNPreference(server)
        let wire = offered.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        return wire.withUnsafeBufferPointer { bytes in
            preference.select(from: bytes).map { String(decoding: bytes[$0.offset..<$0.offset + $0.length], as: UTF8.self) }
        }
    }

    @Test("server preference wins over the client's order")
    func serverPreference() throws {
        #expect(try select(["h2", "http/1.1"], offered: ["http/1.1", "h2"]) == "h2")
        #expect(try select(["h2", "http/1.1"], offered: ["http/1.1"]) == "http/1.1")
    }

    @Test("no overlap selects nothing")
    func noOverlap() throws {
        #expect(try select(["h2", "http/1.1"], offered: ["spdy/3", "h2c"]) == nil)
    }

    @Test("a malformed offer list selects nothing")
    func malformed() throws {
        let preference = try ALPNPreference(["h2"])
        let wire: [UInt8] = [5, 0x68, 0x32]
        #expect(wire.withUnsafeBufferPointer { preference.select(from: $0) } == nil)
    }

    @Test("empty or over-long names are refused")
    func invalidNames() {
        #expect(throws: TLSError.self) { try ALPNPreference([""]) }
        #expect(throws: TLSError.self) { try ALPNPreference([String(repeating: "x", count: 256)]) }
    }
}
