import NIOConcurrencyHelpers

/// The relay's public base URL (`public_url`, or derived from the first listener once it is bound): the
/// `token_uri` of service-account files is `<public url>/token`, and `/token` accepts only that audience.
public final class PublicURL: Sendable {
    private let value: NIOLockedValueBox<String>

    /// A URL; ``set(_:)`` replaces it once the listeners are bound.
    public init(_ url: String) { self.value = NIOLockedValueBox(url) }

    /// The base URL, without a trailing `/`.
    public var url: String { value.withLockedValue { $0 } }

    /// `<url>/token`.
    public var tokenURI: String { url + "/token" }

    /// Replaces the URL (a trailing `/` is dropped).
    public func set(_ url: String) {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        value.withLockedValue { $0 = url }
    }
}
