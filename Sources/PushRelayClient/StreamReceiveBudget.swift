/// The bytes of one streaming response that arrived and still wait for their reader, held against a limit: the
/// back-pressure of a transport whose source cannot be paused (FoundationNetworking's data delegate hands on every
/// chunk as libcurl reads it, however far behind the reader is).
///
/// Past the limit the stream is given up, never trimmed: dropping bytes of an event stream would corrupt its framing
/// and could lose or garble messages, whereas a message not yet acknowledged is delivered again on the next stream.
struct StreamReceiveBudget: Sendable {
    /// What to do with a chunk that arrived.
    enum Action: Equatable, Sendable {
        /// Hand it to the reader; it is now counted as buffered.
        case deliver
        /// It would take the buffer past the limit: end the stream with an error, and cancel its request.
        case overflow
        /// The stream overflowed already: nothing more is delivered.
        case ignore
    }

    /// The most bytes that may wait for the reader.
    let limit: Int
    /// The bytes delivered and not yet read.
    private(set) var buffered = 0
    /// The most bytes that ever waited at once.
    private(set) var highWaterMark = 0
    /// Whether the stream overflowed.
    private(set) var overflowed = false

    init(limit: Int) {
        precondition(limit > 0, "a receive budget needs room for at least one byte")
        self.limit = limit
    }

    /// `count` bytes arrived. One chunk is always taken into an empty buffer, so that a chunk larger than the limit
    /// still makes progress (FoundationNetworking's chunks are libcurl's, 16 KiB at most).
    mutating func received(_ count: Int) -> Action {
        if overflowed { return .ignore }
        guard buffered == 0 || buffered + count <= limit else {
            overflowed = true
            return .overflow
        }
        buffered += count
        highWaterMark = max(highWaterMark, buffered)
        return .deliver
    }

    /// The reader took `count` bytes that were delivered.
    mutating func consumed(_ count: Int) {
        precondition(count <= buffered, "read more bytes than were delivered")
        buffered -= count
    }
}
