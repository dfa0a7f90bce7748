/// Bounds that protect the parser from hostile input.
public struct JSONParseLimits: Sendable, Hashable {
    /// The deepest nesting of arrays and objects accepted; the top-level object is depth 1.
    public var maxDepth: Int
    /// The longest input accepted, in bytes.
    public var maxBytes: Int
    /// Whether a key repeated in one object is an error (``JSONParseError/Code/duplicateKey``), as in proto3 JSON
    /// (FCM HTTP v1), instead of the last value winning (FCM's legacy API, like most JSON readers).
    public var rejectsDuplicateKeys: Bool

    /// Limits with the given values.
    public init(maxDepth: Int = 64, maxBytes: Int = 1 << 20, rejectsDuplicateKeys: Bool = false) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.rejectsDuplicateKeys = rejectsDuplicateKeys
    }

    /// 64 levels, 1 MiB: far above any valid FCM request (1000 tokens of ~160 bytes plus a 4 KiB payload).
    public static let `default` = JSONParseLimits()

    /// The default bounds, a repeated key refused: proto3 JSON, as Google reads FCM HTTP v1 requests.
    public static let v1 = JSONParseLimits(rejectsDuplicateKeys: true)
}
