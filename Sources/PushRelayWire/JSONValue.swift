/// A JSON value: the project's one JSON representation.
///
/// Objects keep their keys in document order (``JSONObject``) and numbers keep the text they were written with
/// (``JSONNumber``), so a value that is parsed and serialized again reads as the sender wrote it, in one line.
/// Parse with ``parse(_:limits:)`` and write with ``serialized()`` or ``write(into:)``.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, with its original text and its integer value when it has one.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object whose keys keep their order.
    case object(JSONObject)
}

extension JSONValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number, if this is a number.
    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The integer, if this is a number written without fraction or exponent that fits in `Int64`.
    public var int64Value: Int64? {
        if case .number(let value) = self { return value.int64Value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The object, if this is an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// A JSON number from an integer.
    public static func integer(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }

    /// The value as text for places that need a string: a string as it is, anything else as compact JSON text.
    ///
    /// This is how the envelope turns `data` values and `notification` custom keys into strings.
    public var stringOrJSONText: String {
        if case .string(let value) = self { return value }
        return serializedString()
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { serializedString() }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string value.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer number.
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object with the keys in the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension JSONValue {
    /// The same value with every object's keys in ascending order, recursively: a canonical form for display and
    /// comparison (objects otherwise keep document order).
    public func sortingKeys() -> JSONValue {
        switch self {
        case .array(let elements):
            return .array(elements.map { $0.sortingKeys() })
        case .object(let object):
            var sorted = JSONObject()
            sorted.reserveCapacity(object.count)
            for member in object.sorted(by: { $0.key < $1.key }) { sorted[member.key] = member.value.sortingKeys() }
            return .object(sorted)
        default:
            return self
        }
    }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A number.
    public init(floatLiteral value: Double) { self = .number(JSONNumber(value)) }
}
