/// One event of a `text/event-stream`, as dispatched by a blank line.
public struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field; `message` when the event named none.
    public var type: String
    /// The `data:` lines joined with `\n`.
    public var data: String
    /// The last event id seen on the stream so far, including this event's `id:` field.
    public var lastEventID: String?
    /// Whether this event carried an `id:` field itself.
    public var hasOwnID: Bool

    /// Creates an event.
    public init(type: String = "message", data: String = "", lastEventID: String? = nil, hasOwnID: Bool = false) {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
        self.hasOwnID = hasOwnID
    }
}

