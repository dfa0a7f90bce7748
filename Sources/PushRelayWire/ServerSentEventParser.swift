/// An incremental parser of `text/event-stream` (the WHATWG "server-sent events" format).
///
/// Feed it the bytes of the response body in whatever chunks they arrive; it returns what each chunk completed.
/// Lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next are one line end).
/// Lines starting with `:` are comments, which the relay sends as heartbeats. `data:` lines accumulate; `id:` sets
/// the last event id (unless it contains NUL); `retry:` with only digits sets the reconnection time; a blank line
/// dispatches the event when it has data. A UTF-8 byte order mark at the start is skipped.
///
/// ``ServerSentEventEncoder`` writes what this parser reads; the tests hold the two against each other.
public struct ServerSentEventParser: Sendable {
    /// What a chunk of bytes completed.
    public enum Output: Sendable, Hashable {
        /// An event with data.
        case event(ServerSentEvent)
        /// A comment line (the text after `:`): a heartbeat.
        case comment(String)
        /// A `retry:` field: the server's reconnection time in milliseconds.
        case retry(Int)
    }

    /// The parser refuses a line longer than this many bytes (protection against a stream without line ends).
    public let maximumLineLength: Int
    /// The parser refuses an event whose `data:` lines add up to more than this many bytes (protection against a
    /// stream of short `data:` lines that never ends its event with a blank line).
    public let maximumEventLength: Int

    private var line: [UInt8] = []
    private var lastByteWasCR = false
    private var atStreamStart = true
    private var eventType = ""
    private var dataLines: [String] = []
    private var dataLength = 0
    private var hasData = false
    private var eventHasID = false
    public private(set) var lastEventID: String?

    /// Creates a parser; `lastEventID` is the id to report until the stream sets one.
    public init(lastEventID: String? = nil, maximumLineLength: Int = 1 << 20, maximumEventLength: Int = 4 << 20) {
        self.lastEventID = lastEventID
        self.maximumLineLength = maximumLineLength
        self.maximumEventLength = maximumEventLength
    }

    /// A line exceeded ``maximumLineLength``.
    public struct LineTooLong: Error, Hashable {}

    /// An event's data exceeded ``maximumEventLength``.
    public struct EventTooLarge: Error, Hashable {}

    /// Consumes `bytes` and returns what they completed, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws -> [Output] {
        var outputs: [Output] = []
        for byte in bytes {
            if atStreamStart {
                if line.count < 3, byte == Self.byteOrderMark[line.count] {
                    line.append(byte)
                    if line.count == 3 {
                        line.removeAll(keepingCapacity: true)
                        atStreamStart = false
                    }
                    continue
                }
                atStreamStart = false
            }
            switch byte {
            case UInt8(ascii: "\n"):
                if lastByteWasCR {
                    lastByteWasCR = false
                } else {
                    try endLine(into: &outputs)
                }
            case UInt8(ascii: "\r"):
                lastByteWasCR = true
                try endLine(into: &outputs)
            default:
                lastByteWasCR = false
                guard line.count < maximumLineLength else { throw LineTooLong() }
                line.append(byte)
            }
        }
        return outputs
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private mutating func endLine(into outputs: inout [Output]) throws(EventTooLarge) {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            dispatch(into: &outputs)
            return
        }
        if line[0] == UInt8(ascii: ":") {
            var comment = line.dropFirst()
            if comment.first == UInt8(ascii: " ") { comment = comment.dropFirst() }
            outputs.append(.comment(String(decoding: comment, as: UTF8.self)))
            return
        }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = line[...]
            value = []
        }
        let text = String(decoding: value, as: UTF8.self)
        switch String(decoding: field, as: UTF8.self) {
        case "event":
            eventType = text
        case "data":
            dataLength += value.count + 1
            guard dataLength <= maximumEventLength + 1 else { throw EventTooLarge() }
            dataLines.append(text)
            hasData = true
        case "id":
            if !value.contains(0) {
                lastEventID = text
                eventHasID = true
            }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
               let milliseconds = Int(text)
            {
                outputs.append(.retry(milliseconds))
            }
        default:
            break  // Unknown fields are ignored.
        }
    }

    private mutating func dispatch(into outputs: inout [Output]) {
        defer {
            eventType = ""
            dataLines.removeAll()
            dataLength = 0
            hasData = false
            eventHasID = false
        }
        guard hasData else { return }
        outputs.append(.event(ServerSentEvent(
            type: eventType.isEmpty ? "message" : eventType,
            data: dataLines.joined(separator: "\n"),
            lastEventID: lastEventID,
            hasOwnID: eventHasID)))
    }
}
