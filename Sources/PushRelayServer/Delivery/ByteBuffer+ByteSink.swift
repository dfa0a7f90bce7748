public import NIOCore
public import PushRelayWire

/// The wire module's encoders write straight into a NIO buffer.
extension ByteBuffer: ByteSink {
    /// Appends `bytes` at the writer index.
    public mutating func appendBytes(_ bytes: some Sequence<UInt8>) {
        writeBytes(bytes)
    }
}
