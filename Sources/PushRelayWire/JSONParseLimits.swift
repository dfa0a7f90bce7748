/// Bounds that protect the parser from hostile input.
public struct JSONParseLimits: Sendable, Hashable {
    /// The deepest nesting of arrays and objects accepted; the top-level object is depth 1.
    public var maxDepth: Int
    /// The longest input accepted, in bytes.
    public var maxBytes: Int

    /// Limits with the given values.
    public init(maxDepth: Int = 64, maxBytes: Int = 1 << 20) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
    }

    /// 64 levels, 1 MiB: far above any valid FCM request (1000 tokens of ~160 bytes plus a 4 KiB payload).
    public static let `default` = JSONParseLimits()
}
