public import Foundation
public import PushRelayWire

/// A JSON value: what a push envelope is made of. The project's one JSON model, PushRelayWire's `JSONValue`, which
/// the relay itself parses and writes with.
///
/// The device-visible envelope (iOS calls it `userInfo`) is a flat JSON object whose values are mostly strings;
/// ``PushMessage/envelope`` holds it as `[String: JSON]`. Numbers keep the text they were sent with, so ids such as
/// `1603214613006763` survive unchanged; objects keep their keys in document order.
public typealias JSON = JSONValue

extension JSONValue {
    /// Parses JSON text (UTF-8 bytes).
    ///
    /// - Throws: `JSONParseError` when the bytes are not JSON.
    public static func parse(_ data: Data) throws -> JSONValue {
        try parse(Array(data))
    }

    /// An object with the dictionary's members, keys in ascending order.
    public init(_ members: [String: JSONValue]) {
        var object = JSONObject()
        object.reserveCapacity(members.count)
        for key in members.keys.sorted() { object[key] = members[key] }
        self = .object(object)
    }

    /// The value as compact JSON text with sorted keys, e.g. `{"a":1}`.
    public var jsonText: String { sortingKeys().serializedString() }

    /// The integer, when this is a number written as an integer that fits an `Int`.
    public var intValue: Int? { int64Value.flatMap { Int(exactly: $0) } }

    /// The number as a `Double`, when this is a number.
    public var doubleValue: Double? { numberValue?.doubleValue }

    /// The members as a dictionary, when this is an object.
    public var dictionaryValue: [String: JSONValue]? {
        guard case .object(let object) = self else { return nil }
        return Dictionary(object.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// A string for a string, the JSON text (``jsonText``) for anything else (`3`, `true`, `{"a":1}`).
    public var displayText: String {
        if case .string(let value) = self { return value }
        return jsonText
    }

    /// Decodes a `Decodable` value from this JSON value.
    ///
    /// - Throws: `DecodingError`, with the coding path of the offending field.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONDecoder().decode(Value.self, from: Data(serialized()))
    }
}

extension JSONValue: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes any JSON value (an object's keys in ascending order: a `Decoder` does not tell their order).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(JSONNumber(value))
        } else if let value = try? container.decode(Double.self) {
            self = .number(JSONNumber(value))
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = JSONValue(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it stands for (an object's keys in their order).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let object):
            var container = encoder.container(keyedBy: Key.self)
            for member in object { try container.encode(member.value, forKey: Key(stringValue: member.key)) }
        default:
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .number(let number):
                if let integer = number.int64Value { try container.encode(integer) } else {
                    try container.encode(number.doubleValue)
                }
            case .string(let value): try container.encode(value)
            case .array(let value): try container.encode(value)
            case .object: break
            }
        }
    }
}
