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
}
