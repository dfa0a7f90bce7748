import Testing

import PushRelayWire

@Suite("ServerSentEventParser")
struct ServerSentEventParserTests {
    private func parse(_ chunks: [String]) throws -> [ServerSentEventParser.Output] {
        var parser = ServerSentEventParser()
        return try chunks.flatMap { try parser.feed(Array($0.utf8)) }
    }

    private func events(_ outputs: [ServerSentEventParser.Output]) -> [ServerSentEvent] {
        outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    private let relayStream = ": hello\n\nid: 1\ndata: {\"a\":1}\n\n: ping\n\nid: 2\ndata: {\"b\":2}\n\n"

    @Test("the relay's stream: comments as heartbeats, one event per message")
    func relayStreamWhole() throws {
        let outputs = try parse([relayStream])
        #expect(outputs == [
            .comment("hello"),
            .event(ServerSentEvent(data: "{\"a\":1}", lastEventID: "1", hasOwnID: true)),
            .comment("ping"),
            .event(ServerSentEvent(data: "{\"b\":2}", lastEventID: "2", hasOwnID: true)),
        ])
    }

    @Test("split at every byte position gives the same result")
    func everySplit() throws {
        let whole = try parse([relayStream])
        let bytes = Array(relayStream.utf8)
        for split in 0...bytes.count {
            var parser = ServerSentEventParser()
            let outputs = try parser.feed(bytes[..<split]) + parser.feed(bytes[split...])
            #expect(outputs == whole, "split at \(split)")
        }
        var parser = ServerSentEventParser()
        let oneByOne = try bytes.flatMap { try parser.feed([$0]) }
        #expect(oneByOne == whole)
    }

    @Test("CRLF, CR and LF line ends, also with CR and LF in different chunks", arguments: ["\r\n", "\r", "\n"])
    func lineEnds(end: String) throws {
        let text = "id: 7\(end)data: x\(end)\(end)"
        let expected = [ServerSentEvent(data: "x", lastEventID: "7", hasOwnID: true)]
        #expect(events(try parse([text])) == expected)
        let bytes = Array(text.utf8)
        for split in 0...bytes.count {
            var parser = ServerSentEventParser()
            let outputs = try parser.feed(bytes[..<split]) + parser.feed(bytes[split...])
            #expect(events(outputs) == expected, "split at \(split)")
        }
    }

    @Test("multi-line data is joined with newlines; no space after the colon is fine")
    func multiLineData() throws {
        let result = events(try parse(["data:first\ndata: second\ndata\n\n"]))
        #expect(result.map(\.data) == ["first\nsecond\n"])
    }

    @Test("id persists to later events without one; an id with NUL is ignored")
    func idRules() throws {
        let result = events(try parse(["id: 5\ndata: a\n\ndata: b\n\nid: x\u{0}y\ndata: c\n\n"]))
        #expect(result.map(\.lastEventID) == ["5", "5", "5"])
        #expect(result.map(\.hasOwnID) == [true, false, false])
    }

    @Test("retry with digits only; event type; unknown fields ignored; no data means no event")
    func otherFields() throws {
        let outputs = try parse(["retry: 3000\nretry: 3s\nevent: deleted\nfoo: bar\ndata: d\n\nid: 9\n\n"])
        #expect(outputs == [.retry(3000), .event(ServerSentEvent(type: "deleted", data: "d"))])
    }

    @Test("a byte order mark at the start is skipped")
    func byteOrderMark() throws {
        var parser = ServerSentEventParser()
        let outputs = try parser.feed([0xEF, 0xBB]) + parser.feed([0xBF] + Array("data: a\n\n".utf8))
        #expect(events(outputs).map(\.data) == ["a"])
    }

    @Test("a line longer than the limit is refused")
    func lineTooLong() {
        var parser = ServerSentEventParser(maximumLineLength: 16)
        #expect(throws: ServerSentEventParser.LineTooLong.self) {
            try parser.feed(Array(repeating: UInt8(ascii: "a"), count: 17))
        }
    }

    @Test("an event whose data lines add up past the limit is refused; one at the limit is dispatched")
    func eventTooLarge() throws {
        // Two lines of 4 bytes joined by a newline: 9 bytes of data.
        var atLimit = ServerSentEventParser(maximumEventLength: 9)
        let outputs = try atLimit.feed(Array("data: abcd\ndata: efgh\n\n".utf8))
        #expect(events(outputs).map(\.data) == ["abcd\nefgh"])
        // The same stream with one byte less allowed; and short lines that never end their event.
        var below = ServerSentEventParser(maximumEventLength: 8)
        #expect(throws: ServerSentEventParser.EventTooLarge.self) {
            try below.feed(Array("data: abcd\ndata: efgh\n\n".utf8))
        }
        var endless = ServerSentEventParser(maximumLineLength: 16, maximumEventLength: 1024)
        #expect(throws: ServerSentEventParser.EventTooLarge.self) {
            for _ in 0..<1000 { _ = try endless.feed(Array("data: x\n".utf8)) }
        }
        // The count starts again with each event.
        var many = ServerSentEventParser(maximumEventLength: 9)
        for _ in 0..<100 {
            #expect(events(try many.feed(Array("data: abcd\ndata: efgh\n\n".utf8))).count == 1)
        }
    }
}
