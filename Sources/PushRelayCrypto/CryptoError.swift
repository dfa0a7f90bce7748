/// A failure of a signature-key operation: a PEM that is not an RSA key, a key too short, a library failure.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; new codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, Hashable {
            case invalidKey
            case unsupportedKey
            case library
        }

        fileprivate let base: Base
        fileprivate init(_ base: Base) { self.base = base }

        /// The PEM text is not a key of the expected kind (public SubjectPublicKeyInfo, private PKCS#8).
        public static let invalidKey = Code(.invalidKey)
        /// A key that is not RSA, or shorter than 2048 bits.
        public static let unsupportedKey = Code(.unsupportedKey)
        /// libcrypto failed (allocation, generation, signing).
        public static let library = Code(.library)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// Details, with libcrypto's error strings when it gave any.
    public var message: String

    /// An error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
