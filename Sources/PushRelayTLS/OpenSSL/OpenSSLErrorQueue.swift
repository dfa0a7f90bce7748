import COpenSSL

/// OpenSSL's per-thread error queue. Connections on one event loop share a thread, so every operation starts
/// with `clear()` and every failure drains the queue into its message.
enum OpenSSLErrorQueue {
    /// Discards errors left on this thread's queue by an earlier operation.
    static func clear() {
        ERR_clear_error()
    }

    /// Takes every error off this thread's queue and joins their strings (`error:0A00010B:SSL routines::…`).
    static func drain() -> String {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            buffer.withUnsafeMutableBufferPointer { pointer in
                ERR_error_string_n(code, pointer.baseAddress, pointer.count)
            }
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.joined(separator: "; ")
    }

    /// A `TLSError` with `context` and whatever the queue holds.
    static func error(_ code: TLSError.Code, _ context: String) -> TLSError {
        let reasons = drain()
        return TLSError(code: code, message: reasons.isEmpty ? context : "\(context): \(reasons)")
    }
}
