import HTTPTypes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connection's senders repeat the same field lines request after request (`authorization`, `content-type`,
/// `user-agent`), so both protocols keep the previous request's fields and reuse the one at the same place when its
/// bytes come again: no new strings, no second validation of the name or the value.
extension HTTPField {
    /// Whether the field's value is exactly `bytes`.
    @inline(__always)
    func valueIs(_ bytes: UnsafeRawBufferPointer) -> Bool {
        withUnsafeBytesOfValue { HTTPField.same(UnsafeRawBufferPointer($0), bytes) }
    }

    /// Whether the field's name, as it was given, is exactly `bytes`.
    @inline(__always)
    func rawNameIs(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var raw = name.rawName
        return raw.withUTF8 { HTTPField.same(UnsafeRawBufferPointer($0), bytes) }
    }

    @inline(__always)
    static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let left = a.baseAddress, let right = b.baseAddress else { return true }
        return memcmp(left, right, a.count) == 0
    }
}
