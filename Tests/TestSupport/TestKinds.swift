public import Testing

extension Tag {
    /// Tests that talk to independent programs on loopback (curl, nghttp, h2load, openssl, Python `h2`, `httpx`,
    /// `google-auth`, Chromium, systemd-analyze, dpkg): an in-process server against a real peer.
    /// `swift test --filter tag:peer` runs them alone.
    @Tag public static var peer: Self
    /// End-to-end tests: the real `pushrelay` binary started on loopback, driven by independent clients
    /// (`Tests/EndToEndTests`). `swift test --filter tag:endToEnd` runs them alone.
    @Tag public static var endToEnd: Self
}
