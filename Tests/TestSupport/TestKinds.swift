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

extension Trait where Self == TimeLimitTrait {
    /// A bound on each test of an end-to-end suite, so that a test that waits for ever (a client that never
    /// returns, a daemon that never answers) fails with its name instead of holding the whole run until CI kills
    /// it. It is a guard against hangs only, far above any test's time under load; no test asserts on timing.
    public static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
