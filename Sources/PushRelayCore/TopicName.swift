/// A topic name: 1…900 characters of `[a-zA-Z0-9-_.~%]`, stored without the optional `/topics/` prefix.
///
/// Names are compared exactly (case-sensitive): `News` and `news` are two topics, in subscriptions, in `to` and in
/// conditions alike.
public struct TopicName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// `/topics/`.
    public static let prefix = "/topics/"

    /// The name without prefix, e.g. `news`.
    public let name: String

    /// Validates `text`, with or without the `/topics/` prefix; `nil` if it is not a valid name.
    public init?(_ text: String) {
        let name = text.hasPrefix(Self.prefix) ? String(text.dropFirst(Self.prefix.utf8.count)) : text
        guard Self.isValidName(name) else { return nil }
        self.name = name
    }

    /// `/topics/<name>`: the envelope's `from` and the form of `to`.
    public var path: String { Self.prefix + name }

    public var description: String { name }

    public static func < (lhs: TopicName, rhs: TopicName) -> Bool { lhs.name < rhs.name }

    /// Whether `name` (without prefix) matches `[a-zA-Z0-9-_.~%]{1,900}`.
    public static func isValidName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count <= FCMLimits.maxTopicNameLength else { return false }
        return utf8.allSatisfy(isNameByte)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "~"), UInt8(ascii: "%"):
            true
        default: false
        }
    }
}
