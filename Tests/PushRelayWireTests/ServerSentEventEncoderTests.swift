import PushRelayWire
import Testing

/// The server's encoder against the client's parser: what one writes, the other reads back unchanged.
@Suite("ServerSentEventEncoder")
struct ServerSentEventEncoderTests {
    private func parse(_ bytes: [UInt8]) throws -> [ServerSentEventParser.Output] {
        var parser = ServerSentEventParser()
        return try parser.feed(bytes)
    }

    @Test("a numeric id writes the same bytes as its decimal string", arguments: [
        UInt64(0), 7, 10, 1_603_214_613_006_763, UInt64.max,
    ])
    func numericID(id: UInt64) {
        for data in ["{}", "", "a\nb\r\nc\rd", String(repeating: "x", count: 300)] {
            var numeric: [UInt8] = []
            var text: [UInt8] = []
            ServerSentEventEncoder.appendEvent(id: id, data: Array(data.utf8), to: &numeric)
            ServerSentEventEncoder.appendEvent(id: String(id), data: Array(data.utf8), to: &text)
            #expect(numeric == text, "\(id) \(data)")
        }
    }

    @Test("a line break is found at any offset, as the byte-by-byte scan finds it")
    func lineBreaksAtEveryOffset() {
        for length in 0...40 {
            for offset in -1..<length {
                for lineBreak in [UInt8(ascii: "\n"), UInt8(ascii: "\r")] {
                    // Bytes next to LF and CR (0x09, 0x0b, 0x0c, 0x0e, 0x8a) must not count as one.
                    var data = (0..<length).map { [0x09, 0x0b, 0x0c, 0x0e, 0x8a, 0x7b][$0 % 6] as UInt8 }
                    if offset >= 0 { data[offset] = lineBreak }
                    var contiguous: [UInt8] = []
                    var scanned: [UInt8] = []
                    ServerSentEventEncoder.appendEvent(id: 1, data: data, to: &contiguous)
                    ServerSentEventEncoder.appendEvent(id: 1, data: data.lazy.map { $0 }, to: &scanned)
                    #expect(contiguous == scanned, "length \(length), line break \(lineBreak) at \(offset)")
                    let dataLines = contiguous.split(separator: UInt8(ascii: "\n")).filter { $0.starts(with: Array("data:".utf8)) }.count
                    #expect(dataLines == (offset >= 0 ? 2 : 1), "length \(length), line break at \(offset)")
                }
            }
        }
    }

    @Test("the relay's stream as the server writes it: connected comment, events, heartbeat")
    func relayStream() throws {
        var bytes: [UInt8] = []
        ServerSentEventEncoder.appendComment("connected", to: &bytes)
        ServerSentEventEncoder.appendEvent(id: "1603214613006763", data: Array(#"{"gcm.message_id":"1603214613006763"}"#.utf8), to: &bytes)
        bytes += ServerSentEventEncoder.heartbeat
        ServerSentEventEncoder.appendEvent(id: "1603214613006764", data: Array("{}".utf8), to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == """
            : connected

            id: 1603214613006763
            data: {"gcm.message_id":"1603214613006763"}

            :

            id: 1603214613006764
            data: {}


            """)
        #expect(try parse(bytes) == [
            .comment("connected"),
            .event(ServerSentEvent(data: #"{"gcm.message_id":"1603214613006763"}"#, lastEventID: "1603214613006763",
                                   hasOwnID: true)),
            .comment(""),
            .event(ServerSentEvent(data: "{}", lastEventID: "1603214613006764", hasOwnID: true)),
        ])
    }

    @Test("data with line breaks, an event type and an empty body round-trip", arguments: [
        "one line", "two\nlines", "crlf\r\nlines", "cr\rline", "trailing\n", "\nleading", "", "é ü 😀 \u{2028}",
    ])
    func roundTrip(data: String) throws {
        var bytes: [UInt8] = []
        ServerSentEventEncoder.appendEvent(id: "7", type: "update", data: Array(data.utf8), to: &bytes)
        let expected = data.replacingLineBreaks()
        #expect(try parse(bytes) == [.event(ServerSentEvent(type: "update", data: expected, lastEventID: "7",
                                                            hasOwnID: true))])
    }

    @Test("an id or type with a line break cannot inject a field")
    func fieldInjection() throws {
        var bytes: [UInt8] = []
        ServerSentEventEncoder.appendEvent(id: "1\ndata: forged", type: "x\ry", data: Array("real".utf8), to: &bytes)
        ServerSentEventEncoder.appendComment("a\nid: 9", to: &bytes)
        #expect(try parse(bytes) == [
            .event(ServerSentEvent(type: "xy", data: "real", lastEventID: "1data: forged", hasOwnID: true)),
            .comment("aid: 9"),
        ])
    }

    @Test("an event without id keeps the stream's last id and says it has none of its own")
    func withoutID() throws {
        var bytes: [UInt8] = []
        ServerSentEventEncoder.appendEvent(id: "5", data: Array("a".utf8), to: &bytes)
        ServerSentEventEncoder.appendEvent(id: String?.none, data: Array("b".utf8), to: &bytes)
        #expect(try parse(bytes) == [
            .event(ServerSentEvent(data: "a", lastEventID: "5", hasOwnID: true)),
            .event(ServerSentEvent(data: "b", lastEventID: "5", hasOwnID: false)),
        ])
    }
}

extension String {
    /// CR LF and CR as LF, as a parser reads them.
    fileprivate func replacingLineBreaks() -> String {
        var result = ""
        var previousWasCR = false
        for scalar in unicodeScalars {
            if scalar == "\r" {
                result.unicodeScalars.append("\n")
                previousWasCR = true
            } else {
                if !(scalar == "\n" && previousWasCR) { result.unicodeScalars.append(scalar) }
                previousWasCR = false
            }
        }
        return result
    }
}
