/// Writes `text/event-stream` (the WHATWG "server-sent events" format) as the relay sends it.
///
/// One event per message, `id: <message id>`, `data: <envelope>` and a blank line; a comment line (`: text`) as
/// the first bytes of a stream and as the heartbeat. Data with line breaks becomes one `data:` line per line, so
/// that ``ServerSentEventParser`` (and a browser's `EventSource`) joins them back with `\n`. The tests hold the
/// encoder and the parser against each other.
///
/// The functions are inlinable so that the server's per-message call is specialized for its `ByteBuffer`.
public enum ServerSentEventEncoder {
    /// The heartbeat: an empty comment and a blank line, `:\n\n`.
    public static let heartbeat: [UInt8] = Array(":\n\n".utf8)

    /// Appends one event: `event:` when `type` is given (and not `message`), `id:` when `id` is given, then the
    /// `data:` lines and the blank line that dispatches it.
    ///
    /// Line breaks and NUL in `id` and `type` cannot be written in a field and are left out.
    @inlinable
    public static func appendEvent(
        id: (some StringProtocol)?, type: String? = nil, data: some Collection<UInt8>, to output: inout some ByteSink
    ) {
        if let type, type != "message" {
            output.appendBytes(eventPrefix)
            output.appendBytes(type.utf8.lazy.filter(isFieldByte))
            output.appendBytes(CollectionOfOne(newline))
        }
        if let id {
            output.appendBytes(idPrefix)
            output.appendBytes(id.utf8.lazy.filter(isFieldByte))
            output.appendBytes(CollectionOfOne(newline))
        }
        appendDataLines(data, to: &output)
        output.appendBytes(CollectionOfOne(newline))
    }

    /// Appends one event with a numeric id (`id: <decimal>`) and no type: what a relay stream writes per message.
    /// The same bytes as ``appendEvent(id:type:data:to:)`` with `String(id)`, written without a `String` and without
    /// filtering the id's bytes one by one (digits are always field bytes).
    @inlinable
    public static func appendEvent(id: UInt64, data: some Collection<UInt8>, to output: inout some ByteSink) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { line in
            // "id: " then the digits, right to left, then the newline.
            var position = 31  // "id: " (4), at most 20 digits, the newline: 25 of 32
            line[position] = newline
            var rest = id
            repeat {
                position -= 1
                line[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            for byte in "id: ".utf8.reversed() {
                position -= 1
                line[position] = byte
            }
            output.appendBytes(UnsafeBufferPointer(rebasing: line[position...]))
        }
        appendDataLines(data, to: &output)
        output.appendBytes(CollectionOfOne(newline))
    }

    /// Appends a comment (`: text`, or `:` for empty text) and a blank line. Line breaks in `text` are left out.
    @inlinable
    public static func appendComment(_ text: String, to output: inout some ByteSink) {
        if text.isEmpty {
            output.appendBytes(heartbeat)
            return
        }
        output.appendBytes(commentPrefix)
        output.appendBytes(text.utf8.lazy.filter(isFieldByte))
        output.appendBytes([newline, newline])
    }

    /// `data: <line>\n` for each line of `data` (split at LF, CR LF or CR); one empty `data:` line for no data.
    @inlinable
    static func appendDataLines(_ data: some Collection<UInt8>, to output: inout some ByteSink) {
        let hasLineBreak =
            data.withContiguousStorageIfAvailable { containsLineBreak(UnsafeRawBufferPointer($0)) }
            ?? data.contains(where: { $0 == newline || $0 == carriageReturn })
        guard hasLineBreak else {
            output.appendBytes(dataPrefix)
            output.appendBytes(data)
            output.appendBytes(CollectionOfOne(newline))
            return
        }
        var index = data.startIndex
        var lineStart = index
        while index != data.endIndex {
            let byte = data[index]
            if byte == newline || byte == carriageReturn {
                output.appendBytes(dataPrefix)
                output.appendBytes(data[lineStart..<index])
                output.appendBytes(CollectionOfOne(newline))
                let next = data.index(after: index)
                if byte == carriageReturn, next != data.endIndex, data[next] == newline {
                    index = data.index(after: next)
                } else {
                    index = next
                }
                lineStart = index
            } else {
                index = data.index(after: index)
            }
        }
        output.appendBytes(dataPrefix)
        output.appendBytes(data[lineStart..<data.endIndex])
        output.appendBytes(CollectionOfOne(newline))
    }

    /// Whether `bytes` holds an LF or a CR, eight bytes at a time: a relay stream scans every event's data (JSON,
    /// which rarely has one), and the byte-by-byte scan was ≈ 2 % of a delivered send's instructions.
    @usableFromInline
    static func containsLineBreak(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            // A byte of `x` is zero exactly when `(x - ones) & ~x & highs` has its high bit (no false positive is
            // possible in the lowest zero byte; a borrow can only mark bytes above a real zero, so "any" is exact).
            let lf = word ^ (ones &* UInt64(newline))
            let cr = word ^ (ones &* UInt64(carriageReturn))
            if ((lf &- ones) & ~lf & highs) | ((cr &- ones) & ~cr & highs) != 0 { return true }
            offset += 8
        }
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == newline || byte == carriageReturn { return true }
            offset += 1
        }
        return false
    }

    // Computed, not stored: a stored `static let` is a lazily initialized global, read through its accessor (a
    // once-check) for every byte the scans above look at.
    @inlinable
    static var newline: UInt8 { UInt8(ascii: "\n") }
    @inlinable
    static var carriageReturn: UInt8 { UInt8(ascii: "\r") }
    @usableFromInline
    static let idPrefix: [UInt8] = Array("id: ".utf8)
    @usableFromInline
    static let eventPrefix: [UInt8] = Array("event: ".utf8)
    @usableFromInline
    static let dataPrefix: [UInt8] = Array("data: ".utf8)
    @usableFromInline
    static let commentPrefix: [UInt8] = Array(": ".utf8)

    @inlinable
    static func isFieldByte(_ byte: UInt8) -> Bool {
        byte != newline && byte != carriageReturn && byte != 0
    }
}
