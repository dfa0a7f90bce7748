/// Fired as an inbound user event by the TLS handler once the handshake has completed.
///
/// The HTTP transport reads `applicationProtocol` (the ALPN result) to choose HTTP/2 or HTTP/1.1 on a client
/// connection; on the server the first plaintext bytes decide, so both agree with what ALPN chose.
public struct TLSHandshakeCompleted: Sendable, Hashable {
    /// The protocol ALPN settled on (`"h2"`, `"http/1.1"`), or `nil` when the peer offered none.
    public var applicationProtocol: String?
    /// The negotiated protocol version, e.g. `"TLSv1.3"`.
    public var protocolVersion: String

    public init(applicationProtocol: String?, protocolVersion: String) {
        self.applicationProtocol = applicationProtocol
        self.protocolVersion = protocolVersion
    }
}

/// Fired through the pipeline (a user inbound event) by a server-side TLS handler whose handshake failed, once,
/// before the connection closes; the failure is also logged. The client side fires the `TLSError` itself through
/// `errorCaught` instead.
public struct TLSHandshakeFailed: Sendable, Hashable {
    /// What went wrong.
    public var error: TLSError

    public init(error: TLSError) {
        self.error = error
    }
}
