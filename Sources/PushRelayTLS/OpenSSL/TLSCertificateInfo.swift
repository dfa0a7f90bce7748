/// What a loaded certificate says about itself; logged on load and reload, returned by `reload()`.
public struct TLSCertificateInfo: Sendable, Hashable, CustomStringConvertible {
    /// The subject distinguished name, RFC 2253 form (`CN=relay.example.com`).
    public var subject: String
    /// The issuer distinguished name, RFC 2253 form.
    public var issuer: String
    /// The serial number in upper-case hexadecimal.
    public var serialNumber: String
    /// Start of validity as OpenSSL prints it (`Nov 22 03:45:21 2026 GMT`).
    public var notValidBefore: String
    /// End of validity as OpenSSL prints it.
    public var notValidAfter: String

    /// Creates a summary from its parts.
    public init(subject: String, issuer: String, serialNumber: String, notValidBefore: String, notValidAfter: String) {
        self.subject = subject
        self.issuer = issuer
        self.serialNumber = serialNumber
        self.notValidBefore = notValidBefore
        self.notValidAfter = notValidAfter
    }

    public var description: String {
        "subject=\(subject) issuer=\(issuer) serial=\(serialNumber) notAfter=\(notValidAfter)"
    }
}
