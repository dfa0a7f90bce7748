/// The rule for a new project's name. The name is the FCM HTTP v1 `project_id`: a segment of the path
/// `/v1/projects/{project_id}/messages:send` that senders build from their service-account file unescaped, and the
/// domain of that file's `client_email`. So it is 1 to 63 ASCII letters, digits, `-`, `_` and `.`, starting with a
/// letter or a digit: `a/b` or `x?y` would be a project no v1 sender could address. Checked by every store when a
/// project is created (projects created before the rule keep their names).
enum ProjectName {
    static let maxLength = 63

    static func validate(_ name: String) throws(StoreError) {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= maxLength, isAlphanumeric(first),
            bytes.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") })
        else {
            throw StoreError.invalidArgument(
                "a project name has 1 to \(maxLength) letters, digits, '-', '_' and '.', starting with a letter or a "
                    + "digit (it is the FCM v1 project_id in request paths)")
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }
}
