import NIOConcurrencyHelpers

/// An in-memory cache of hot lookups: server key → project, access token → project, device secret → device,
/// token → device, project id → project. Only hits are cached (a miss always asks the database, so a project or device created by
/// another process is seen at once).
///
/// Invalidation: every write that can turn a hit into a miss (project delete, key rotation, device unregister) bumps
/// `auth_epoch` in the database in its transaction. This process clears the cache after such a commit (after an
/// unregistration it drops only that device, unless another process moved the epoch too; on PostgreSQL the other
/// nodes do the same from the commit's notification, which names the device); changes by
/// another process (the CLI) are noticed by re-reading the epoch at most every
/// ``SQLiteStore/Configuration/authRecheckInterval``. A lookup that raced with an invalidation does not fill the cache
/// (generation check).
final class AuthCache: Sendable {
    struct ServerKeyEntry: Sendable {
        var project: Project
        /// Microseconds; nil for the current key.
        var validUntil: Int64?
    }

    private struct State: Sendable {
        var generation: UInt64 = 0
        var epoch: Int64?
        var lastCheck: ContinuousClock.Instant?
        var serverKeys: [KeyHash: ServerKeyEntry] = [:]
        /// Access tokens of service accounts (FCM HTTP v1), `validUntil` = their expiry; apart from server keys so
        /// that neither credential opens the other's API.
        var accessTokens: [KeyHash: ServerKeyEntry] = [:]
        var devicesBySecret: [KeyHash: Device] = [:]
        var devicesByToken: [String: Device] = [:]
        var projects: [ProjectID: Project] = [:]
        /// Digests of server keys and device secrets that found a cached entry, by the key as presented: a send's
        /// credential is looked up from memory without hashing it again (SHA-256 was ≈ 7,000 of the ≈ 255,000
        /// instructions of a send). A digest is a function of its key, so no invalidation clears them; only keys
        /// that matched a cached credential get in (a stream of made-up keys adds nothing), at most
        /// ``AuthCache/maxDigests``. The clear-text keys held here are the ones requests carry in memory anyway;
        /// nothing is written anywhere.
        var digests: [String: KeyHash] = [:]

        /// Entries over the tables that ``AuthCache/maxEntries`` bounds (the digests have their own bound).
        var count: Int {
            serverKeys.count + accessTokens.count + devicesBySecret.count + devicesByToken.count + projects.count
        }
    }

    private let state = NIOLockedValueBox(State())
    private let maxEntries: Int
    /// The most memoized digests (``State/digests``).
    static let maxDigests = 4096

    init(maxEntries: Int) {
        self.maxEntries = max(maxEntries, 1)
    }

    /// True when the epoch should be re-read now (the caller then calls ``observe(epoch:)``).
    func epochCheckDue(interval: Duration) -> Bool {
        let now = ContinuousClock.now
        return self.state.withLockedValue { state in
            if let last = state.lastCheck, now - last < interval, state.epoch != nil {
                return false
            }
            state.lastCheck = now
            return true
        }
    }

    /// True when an epoch check is due (or none was made yet); unlike ``epochCheckDue(interval:)`` it claims
    /// nothing: a memory-only lookup asks it and leaves the check to the next lookup that may read the database.
    func epochCheckPending(interval: Duration) -> Bool {
        let now = ContinuousClock.now
        return self.state.withLockedValue { state in
            guard let last = state.lastCheck, state.epoch != nil else { return true }
            return now - last >= interval
        }
    }

    /// Records the epoch read from the database; clears the cache if it moved.
    func observe(epoch: Int64) {
        self.state.withLockedValue { state in
            if state.epoch != epoch {
                Self.clear(&state)
                state.epoch = epoch
            }
        }
    }

    /// Clears everything (after a commit of this process that changed credentials or removed devices).
    func invalidate(epoch: Int64?) {
        self.state.withLockedValue { state in
            Self.clear(&state)
            state.epoch = epoch
        }
    }

    /// After a commit of this process whose only credential change was removing `devices` (an unregistration):
    /// drops just those entries when `epoch` directly follows the epoch last observed, so that a register and
    /// unregister loop does not push every other look-up onto the database; clears everything otherwise (another
    /// process changed something too, or no epoch was observed yet).
    func evict(devices: [(device: Device, secret: KeyHash)], epoch: Int64?) {
        self.evict(tokens: devices.map(\.device.token), secrets: devices.map(\.secret), epoch: epoch)
    }

    /// ``evict(devices:epoch:)`` by the removed devices' tokens and secret hashes (what another PostgreSQL node's
    /// notification carries).
    func evict(tokens: [String], secrets: [KeyHash], epoch: Int64?) {
        self.state.withLockedValue { state in
            guard let epoch, let observed = state.epoch, epoch == observed &+ 1 else {
                Self.clear(&state)
                state.epoch = epoch
                return
            }
            // A look-up that read a removed device before the commit must not put it back.
            state.generation &+= 1
            for secret in secrets { state.devicesBySecret[secret] = nil }
            for token in tokens { state.devicesByToken[token] = nil }
            state.epoch = epoch
        }
    }

    /// The project of a cached server key, from memory only (``PushStore/cachedProject(serverKey:)``): nil when the
    /// key is not cached, has expired by `nowMicros`, or the epoch is due for a check (that look-up reads the
    /// database).
    func cachedProject(serverKey key: String, recheckInterval: Duration, nowMicros: Int64) -> Project? {
        guard !self.epochCheckPending(interval: recheckInterval),
            let entry = self.lookUp(key, in: { state, hash in state.serverKeys[hash] })
        else {
            return nil
        }
        if let validUntil = entry.validUntil, validUntil <= nowMicros { return nil }
        return entry.project
    }

    /// The project of a cached OAuth2 access token, from memory only (``PushStore/cachedProject(accessToken:)``):
    /// nil when the token is not cached, has expired by `nowMicros` (an access token always has an expiry), or the
    /// epoch is due for a check.
    func cachedProject(accessToken token: String, recheckInterval: Duration, nowMicros: Int64) -> Project? {
        guard !self.epochCheckPending(interval: recheckInterval),
            let entry = self.lookUp(token, in: { state, hash in state.accessTokens[hash] }),
            let expiresAt = entry.validUntil, expiresAt > nowMicros
        else {
            return nil
        }
        return entry.project
    }

    /// Every token's cached device, or nil when one is not cached or the epoch is due for a check
    /// (``PushStore/cachedDevices(tokens:)``).
    func cachedDevices(tokens: [String], recheckInterval: Duration) -> [Device]? {
        guard !self.epochCheckPending(interval: recheckInterval) else { return nil }
        // Read into the answer under the lock: through `devices(tokens:)`'s optionals it was two arrays and two copies
        // of each device a send.
        return self.state.withLockedValue { state -> [Device]? in
            var devices: [Device] = []
            devices.reserveCapacity(tokens.count)
            for token in tokens {
                guard let device = state.devicesByToken[token] else { return nil }
                devices.append(device)
            }
            return devices
        }
    }

    /// The cached device of a secret, or nil when it is not cached or the epoch is due for a check
    /// (``PushStore/cachedDevice(secret:)``).
    func cachedDevice(secret: String, recheckInterval: Duration) -> Device? {
        guard !self.epochCheckPending(interval: recheckInterval) else { return nil }
        return self.lookUp(secret, in: { state, hash in state.devicesBySecret[hash] })
    }

    /// The cached entry of a presented key: by its memoized digest when it matched before (``State/digests``), else by
    /// hashing it, memoizing the digest when that finds an entry.
    private func lookUp<Entry>(_ key: String, in table: (State, KeyHash) -> Entry?) -> Entry? {
        let memoized = self.state.withLockedValue { state -> Entry?? in
            state.digests[key].map { table(state, $0) }
        }
        if let memoized { return memoized }
        let hash = KeyHash(of: key)
        return self.state.withLockedValue { state in
            guard let entry = table(state, hash) else { return nil }
            // Full (more devices acknowledging than it holds): a thirty-second goes, not the server keys' digests
            // with all the rest.
            if state.digests.count >= Self.maxDigests { state.digests.removeSome(Self.maxDigests / 32) }
            state.digests[key] = hash
            return entry
        }
    }

    /// How many presented keys have a memoized digest. For tests.
    var memoizedDigests: Int { self.state.withLockedValue { $0.digests.count } }

    /// The current generation, to pass back when inserting what a database read returned.
    var generation: UInt64 {
        self.state.withLockedValue { $0.generation }
    }

    func serverKey(_ hash: KeyHash) -> ServerKeyEntry? {
        self.state.withLockedValue { $0.serverKeys[hash] }
    }

    func insertServerKey(_ hash: KeyHash, _ entry: ServerKeyEntry, generation: UInt64) {
        self.insert(generation: generation) { $0.serverKeys[hash] = entry }
    }

    func accessToken(_ hash: KeyHash) -> ServerKeyEntry? {
        self.state.withLockedValue { $0.accessTokens[hash] }
    }

    /// A credential the cache keeps by its hash.
    enum Credential {
        /// A project's server key (FCM legacy): valid until its end, if it has one.
        case serverKey
        /// An OAuth2 access token (FCM HTTP v1): valid until its expiry.
        case accessToken
    }

    /// The project of a credential (``PushStore/authenticateServerKey(_:)``,
    /// ``PushStore/authenticateAccessToken(_:)``): its entry from memory, else from `read` (the store's row, nil for
    /// none), which is then kept under the generation taken before the read; nil also once the credential has ended
    /// by `nowMicros`. Both engines' look-up.
    func project(
        of credential: Credential, _ hash: KeyHash, nowMicros: Int64, read: () async throws -> ServerKeyEntry?
    ) async throws -> Project? {
        let entry: ServerKeyEntry
        if let cached = credential == .serverKey ? self.serverKey(hash) : self.accessToken(hash) {
            entry = cached
        } else {
            let generation = self.generation
            guard let found = try await read() else { return nil }
            switch credential {
            case .serverKey: self.insertServerKey(hash, found, generation: generation)
            case .accessToken: self.insertAccessToken(hash, found, generation: generation)
            }
            entry = found
        }
        guard let end = entry.validUntil else { return credential == .serverKey ? entry.project : nil }
        return end > nowMicros ? entry.project : nil
    }

    func insertAccessToken(_ hash: KeyHash, _ entry: ServerKeyEntry, generation: UInt64) {
        self.insert(generation: generation) { $0.accessTokens[hash] = entry }
    }

    func device(secret hash: KeyHash) -> Device? {
        self.state.withLockedValue { $0.devicesBySecret[hash] }
    }

    /// Caches a device found by its secret, by its token too: a device that opens a stream or acknowledges is the
    /// one sends are addressed to next, and its first send after a restart is then served from memory instead of a
    /// read (a device's token never changes; an unregistration evicts both entries).
    func insertDevice(_ device: Device, secret hash: KeyHash, generation: UInt64) {
        self.insert(generation: generation) { state in
            state.devicesBySecret[hash] = device
            state.devicesByToken[device.token] = device
        }
    }

    /// Cached devices of these tokens (nil where not cached).
    func devices(tokens: [String]) -> [Device?] {
        self.state.withLockedValue { state in tokens.map { state.devicesByToken[$0] } }
    }

    func insertDevices(_ devices: [Device], generation: UInt64) {
        self.insert(generation: generation) { state in
            for device in devices {
                state.devicesByToken[device.token] = device
            }
        }
    }

    func project(_ id: ProjectID) -> Project? {
        self.state.withLockedValue { $0.projects[id] }
    }

    func insertProject(_ project: Project, generation: UInt64) {
        self.insert(generation: generation) { $0.projects[project.id] = project }
    }

    private func insert(generation: UInt64, _ body: (inout State) -> Void) {
        self.state.withLockedValue { state in
            guard state.generation == generation else { return }
            if state.count >= self.maxEntries {
                self.makeRoom(&state)
            }
            body(&state)
        }
    }

    /// Entries held, over every table. For tests.
    var count: Int { self.state.withLockedValue { $0.count } }

    /// A full cache drops a thirty-second of its room, from its largest tables (the devices, on a node with many), in
    /// hash order: entries chosen at random, each still valid, so no generation is bumped. It used to start over
    /// instead, and with as many devices streaming and acknowledging as it has room for, every server key, project and
    /// device was dropped each time it filled, and every send took the store's path until they were read again. A
    /// thirty-second keeps each drop short under the lock (≈ 15,000 removals at the default size).
    private func makeRoom(_ state: inout State) {
        let target = self.maxEntries - max(2, self.maxEntries / 32)
        while state.count > max(target, 0) {
            // Half of what is left to drop, from the largest table: the two device tables shrink in turn.
            let drop = max(1, (state.count - max(target, 0) + 1) / 2)
            let largest = max(
                state.devicesBySecret.count, state.devicesByToken.count, state.serverKeys.count,
                state.accessTokens.count, state.projects.count)
            if state.devicesBySecret.count == largest {
                state.devicesBySecret.removeSome(drop)
            } else if state.devicesByToken.count == largest {
                state.devicesByToken.removeSome(drop)
            } else if state.serverKeys.count == largest {
                state.serverKeys.removeSome(drop)
            } else if state.accessTokens.count == largest {
                state.accessTokens.removeSome(drop)
            } else {
                state.projects.removeSome(drop)
            }
        }
    }

    private static func clear(_ state: inout State) {
        state.generation &+= 1
        state.serverKeys.removeAll()
        state.accessTokens.removeAll()
        state.devicesBySecret.removeAll()
        state.devicesByToken.removeAll()
        state.projects.removeAll()
    }
}

extension Dictionary {
    /// Removes `count` entries (or all, if fewer), in hash order: entries chosen at random. A bounded cache's way to
    /// make room without starting over.
    mutating func removeSome(_ count: Int) {
        for key in Array(self.keys.prefix(count)) {
            self[key] = nil
        }
    }
}
