/// A JSON object that keeps its keys in the order they were first written.
///
/// Keys are unique: setting an existing key replaces its value in place (a parsed object with a repeated key keeps
/// the last value at the first key's position, as most JSON parsers do). Lookup is a linear scan while the object is
/// small, the fastest choice for the small objects of push payloads; from ``indexThreshold`` members on, a key →
/// position table keeps look-ups and updates constant-time, so that building or reading an object with many keys
/// (a hostile body of thousands of `data.N=` fields) costs linear time, not quadratic.
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
    /// Key → position in ``entries``, kept once the object has ``indexThreshold`` members; nil below.
    private var positions: [String: Int]?

    /// From this many members on, keys are found through a table instead of a scan.
    static let indexThreshold = 16

    /// An empty object.
    public init() { self.entries = [] }

    /// The position of `key` in ``entries``, or nil.
    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return entries.firstIndex(where: { $0.key == key })
    }

    /// The value for `key`, or `nil`. Setting `nil` removes the key.
    public subscript(key: String) -> JSONValue? {
        get {
            position(of: key).map { entries[$0].value }
        }
        set {
            if let index = position(of: key) {
                guard let newValue else {
                    entries.remove(at: index)
                    positions = nil
                    indexIfLarge()
                    return
                }
                entries[index].value = newValue
            } else if let newValue {
                entries.append(Member(key: key, value: newValue))
                if positions != nil {
                    positions![key] = entries.count - 1
                } else {
                    indexIfLarge()
                }
            }
        }
    }

    /// Builds the key table once the object is large enough for it.
    private mutating func indexIfLarge() {
        guard positions == nil, entries.count >= Self.indexThreshold else { return }
        var table: [String: Int] = [:]
        table.reserveCapacity(entries.count * 2)
        for (index, entry) in entries.enumerated() { table[entry.key] = index }
        positions = table
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
