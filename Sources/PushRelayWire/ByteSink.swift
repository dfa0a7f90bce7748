/// Where encoded bytes go: a byte array here, a NIO `ByteBuffer` in the server (which conforms in its own module).
///
/// The wire module writes through this protocol so that it needs neither NIO nor Foundation.
public protocol ByteSink {
    /// Appends `bytes` at the end.
    mutating func appendBytes(_ bytes: some Sequence<UInt8>)
}

extension Array: ByteSink where Element == UInt8 {
    /// Appends `bytes` at the end.
    public mutating func appendBytes(_ bytes: some Sequence<UInt8>) {
        append(contentsOf: bytes)
    }
}
