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

/// A head read over the previous head's fields (both protocols): it starts as those fields (their storage shared),
/// a line equal to the field at its place keeps that field, a different one replaces it (the storage is copied at the
/// first replacement), lines past the end are appended, and fields past the head's last line are dropped.
extension HTTPFields {
    /// The fields a head starts from: `recent` itself, or room for eight when there is none.
    @inline(__always)
    static func reading(over recent: HTTPFields) -> HTTPFields {
        var fields = recent
        if fields.isEmpty { fields.reserveCapacity(8) }  // one allocation, not one per doubling
        return fields
    }

    /// Puts `field` at `position`: in place of the previous head's field there, or appended past the end.
    @inline(__always)
    mutating func put(_ field: HTTPField, at position: Int) {
        if position < count { self[position] = field } else { append(field) }
    }

    /// Drops the previous head's fields past the head's `lineCount` lines.
    @inline(__always)
    mutating func keepFirst(_ lineCount: Int) {
        if lineCount < count { removeSubrange(lineCount...) }
    }
}
