public import HTTPTypes

extension HTTPFields {
    /// The value of the first field named `name`, or `nil`.
    ///
    /// `HTTPFields`' subscript joins every field of the name into a new string (`"a, b"`) on each read; for fields
    /// that occur once (`authorization`, `content-type`, `content-length`) on the per-request path this is the
    /// same answer without the allocation.
    @inlinable
    public func firstValue(for name: HTTPField.Name) -> String? {
        for field in self where field.name == name {
            return field.value
        }
        return nil
    }

    /// The value of the one field named `name`, or `nil` when there is none or more than one.
    ///
    /// For singleton fields whose repetition is ambiguous rather than a list (RFC 9110 §5.3), such as
    /// `Authorization`: two credentials in one request are refused, not resolved by picking one, so that a proxy
    /// and the daemon cannot read different credentials out of the same head.
    @inlinable
    public func onlyValue(for name: HTTPField.Name) -> String? {
        var found: String? = nil
        for field in self where field.name == name {
            guard found == nil else { return nil }
            found = field.value
        }
        return found
    }
}
