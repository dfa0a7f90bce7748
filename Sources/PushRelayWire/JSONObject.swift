/// A JSON object that keeps its keys in the order they were first written.
///
/// Keys are unique: setting an existing key replaces its value in place (a parsed object with a repeated key keeps
/// the last value at the first key's position, as most JSON parsers do). Lookup is a linear scan, which is the
/// fastest choice for the small objects of push payloads; the parser de-duplicates large objects with a hash set.
public struct JSONObject: Sendable, Hashable, RandomAccessCollection {
    /// One member of the object: a key and its value.
    public struct Member: Sendable, Hashable {
        /// The key.
        public var key: String
        /// The value.
        public var value: JSONValue

        /// A member.
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members in order.
    public private(set) var entries: [Member]

    /// An empty object.
    public init() { self.entries = [] }

    /// An object from members whose keys are already unique (the caller's promise; not checked).
    init(uniqueEntries: [Member]) { self.entries = uniqueEntries }

    /// The value for `key`, or `nil`. Setting `nil` removes the key.
    public subscript(key: String) -> JSONValue? {
        get {
            for entry in entries where entry.key == key { return entry.value }
            return nil
        }
        set {
            if let index = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
            } else if let newValue {
                entries.append(Member(key: key, value: newValue))
            }
        }
    }

    /// The keys in order.
    public var keys: [String] { entries.map(\.key) }

    /// Reserves room for `count` members.
    public mutating func reserveCapacity(_ count: Int) { entries.reserveCapacity(count) }

    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(position: Int) -> Member { entries[position] }

    /// Equal when the same keys hold equal values in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool { lhs.entries == rhs.entries }

    public func hash(into hasher: inout Hasher) { hasher.combine(entries) }
}
