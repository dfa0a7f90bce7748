import Foundation
import PushRelayCore
import Testing
@testable import PushRelayStore

/// The digests ``AuthCache`` memoizes by presented key: a hit skips SHA-256, and nothing else changes.
@Suite("Store: memoized credential digests")
struct AuthCacheDigestTests {
    private let project = Project(id: ProjectID(rawValue: 7), name: "shop", senderID: 123_456_789_01, createdAt: Date())

    /// A cache whose epoch was just checked, holding `key`'s server-key entry.
    private func cache(holding key: String) -> AuthCache {
        let cache = AuthCache(maxEntries: 100_000)
        #expect(cache.epochCheckDue(interval: .seconds(60)))
        cache.observe(epoch: 0)
        cache.insertServerKey(
            KeyHash(of: key), AuthCache.ServerKeyEntry(project: project, validUntil: nil), generation: cache.generation)
        return cache
    }

    private func lookUp(_ cache: AuthCache, _ key: String) -> Project? {
        cache.cachedProject(serverKey: key, recheckInterval: .seconds(60), nowMicros: 0)
    }

    @Test("a key that matched is memoized and keeps matching; one that did not is never held")
    func onlyMatchesAreMemoized() {
        let cache = self.cache(holding: "server-key")
        #expect(cache.memoizedDigests == 0)
        #expect(self.lookUp(cache, "server-key") == project)
        #expect(cache.memoizedDigests == 1)
        #expect(self.lookUp(cache, "server-key") == project, "from the memoized digest")
        for index in 0..<100 {
            #expect(self.lookUp(cache, "made-up-\(index)") == nil)
        }
        #expect(cache.memoizedDigests == 1, "misses add nothing")
    }

    @Test("an invalidation still ends a memoized key's access")
    func invalidationStillApplies() {
        let cache = self.cache(holding: "server-key")
        #expect(self.lookUp(cache, "server-key") == project)
        #expect(cache.memoizedDigests == 1)
        cache.invalidate(epoch: 1)
        #expect(self.lookUp(cache, "server-key") == nil, "the digest is known, the entry is gone")
    }

    @Test("a device secret is memoized the same way")
    func deviceSecrets() {
        let cache = self.cache(holding: "server-key")
        let device = Device(
            id: DeviceID(rawValue: 3), project: project.id, token: "token", app: "a", platform: "IOS", registeredAt: Date())
        cache.insertDevice(device, secret: KeyHash(of: "secret"), generation: cache.generation)
        #expect(cache.cachedDevice(secret: "secret", recheckInterval: .seconds(60)) == device)
        #expect(cache.cachedDevice(secret: "secret", recheckInterval: .seconds(60)) == device)
        #expect(cache.cachedDevice(secret: "other", recheckInterval: .seconds(60)) == nil)
        #expect(cache.memoizedDigests == 1)
    }

    @Test("the memo is bounded, and a full one drops a part of itself")
    func bounded() {
        let cache = AuthCache(maxEntries: 100_000)
        #expect(cache.epochCheckDue(interval: .seconds(60)))
        cache.observe(epoch: 0)
        for index in 0..<(AuthCache.maxDigests + 10) {
            cache.insertServerKey(
                KeyHash(of: "key-\(index)"), AuthCache.ServerKeyEntry(project: project, validUntil: nil),
                generation: cache.generation)
            #expect(self.lookUp(cache, "key-\(index)") == project)
        }
        #expect(cache.memoizedDigests <= AuthCache.maxDigests)
        // Full, it dropped a thirty-second, not everything (which would have taken the server keys' digests along).
        #expect(cache.memoizedDigests >= AuthCache.maxDigests - AuthCache.maxDigests / 32)
    }
}
