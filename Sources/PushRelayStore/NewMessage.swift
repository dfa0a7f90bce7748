/// A message to append to one device's queue.
public struct NewMessage: Hashable, Sendable {
    /// The target device (from ``PushStore/resolveTokens(_:)``).
    public var device: DeviceID
    /// The message as the relay wants it back at delivery (opaque to the store; at most a few kB).
    public var body: [UInt8]
    /// The collapse key, or nil for a non-collapsible message.
    public var collapseKey: String?
    /// Time to live. Zero means deliver now or drop: the store does not store it and answers
    /// ``EnqueueResult/transient(_:)`` with an id for the live delivery.
    public var timeToLive: Duration

    /// Creates a message; the default time to live is FCM's four weeks.
    public init(
        device: DeviceID,
        body: [UInt8],
        collapseKey: String? = nil,
        timeToLive: Duration = .seconds(2_419_200)
    ) {
        self.device = device
        self.body = body
        self.collapseKey = collapseKey
        self.timeToLive = timeToLive
    }
}
