public import Foundation
public import PushRelayCore
/// Where PushRelay keeps projects, devices, topic subscriptions and the per-device message queues.
///
/// Engine-agnostic: ``SQLiteStore`` is the default, ``PostgresStore`` lets several nodes share one database; SQL
/// stays inside the implementations. Every write is durable when its call returns (the transaction has committed and, for SQLite,
/// fsynced), and many concurrent writes share one commit. Keys and secrets are stored as SHA-256 hashes and
/// compared in constant time; the clear values exist only in ``ProjectCredentials`` and ``DeviceRegistration``.
///
/// Errors are ``StoreError``; ``StoreError/Code/unavailable`` means nothing was committed for that call.
public protocol PushStore: Sendable {
    // MARK: Projects

    /// Creates a project with a fresh unique 11-digit sender id, server key and client key.
    /// Throws ``StoreError/Code/alreadyExists`` if the name is taken, ``StoreError/Code/invalidArgument`` if empty.
    func createProject(name: String) async throws -> ProjectCredentials

    /// All projects, by name.
    func projects() async throws -> [Project]

    /// The project with this name, or nil.
    func project(named name: String) async throws -> Project?

    /// The project with this id, or nil (e.g. for the sender id of a device's project).
    func project(id: ProjectID) async throws -> Project?

    /// Deletes a project with its devices, messages, topics, subscriptions and device groups. Returns false if there
    /// was none.
    func deleteProject(named name: String) async throws -> Bool

    /// Issues a new server key for the project and returns it in clear (once). The keys valid until now stay valid
    /// for `gracePeriod` more (keys already in a shorter grace period keep theirs).
    /// Throws ``StoreError/Code/notFound`` for an unknown project.
    func rotateServerKey(project name: String, gracePeriod: Duration) async throws -> String

    /// Ends the grace period of the project's previous server keys now: from the next request on only the current
    /// key authenticates (after a leak, once every sender has the new key). Returns how many keys were still valid
    /// and are no longer. Throws ``StoreError/Code/notFound`` for an unknown project.
    func revokePreviousServerKeys(project name: String) async throws -> Int

    /// Replaces the project's client key with a new one and returns it in clear (once). The previous key stops
    /// registering devices at once; devices already registered keep working (they use their own secrets).
    /// Throws ``StoreError/Code/notFound`` for an unknown project.
    func rotateClientKey(project name: String) async throws -> String

    /// The project whose current (or in-grace) server key this is, or nil (answer 401).
    func authenticateServerKey(_ key: String) async throws -> Project?

    /// The project if `key` is its client key, or nil.
    func authenticateClientKey(_ key: String, project name: String) async throws -> Project?

    // MARK: Service accounts (FCM HTTP v1)

    /// Adds a service-account key to a project: its id (`private_key_id`), the account's client email and the public
    /// key PEM (the private key is never given to the store). A project may hold several keys.
    /// Throws ``StoreError/Code/notFound`` for an unknown project, ``StoreError/Code/alreadyExists`` for a used id.
    func addServiceAccountKey(
        project name: String, keyID: String, clientEmail: String, publicKeyPEM: String
    ) async throws -> ServiceAccountKey

    /// The project's service-account keys, revoked ones included, oldest first.
    func serviceAccountKeys(project name: String) async throws -> [ServiceAccountKey]

    /// The key with this id (revoked or not), or nil.
    func serviceAccountKey(id: String) async throws -> ServiceAccountKey?

    /// Revokes a key of the project: it signs no more grants and the access tokens issued for it stop working at
    /// once. Returns false if the project has no such valid key.
    func revokeServiceAccountKey(project name: String, keyID: String) async throws -> Bool

    /// Stores an access token issued for `key` (its SHA-256 hash only) until `expiresAt`. Throws
    /// ``StoreError/Code/notFound`` if the key was revoked meanwhile.
    func issueAccessToken(_ token: String, key: ServiceAccountKey, expiresAt: Date) async throws

    /// The project an unexpired access token of a valid key sends for, or nil (answer 401).
    func authenticateAccessToken(_ token: String) async throws -> Project?

    // MARK: Devices

    /// Registers a device: a new token and secret. With `deviceLimit`, throws
    /// ``StoreError/Code/resourceExhausted`` (nothing written) when the project already has that many devices.
    func registerDevice(project: ProjectID, app: String, platform: String, deviceLimit: Int?) async throws
        -> DeviceRegistration

    /// Which of these devices still exist (not unregistered, expired, or gone with their project). The daemon asks
    /// it for the devices holding a stream, so that a removed device's stream ends whichever process removed it.
    func existingDevices(_ devices: [DeviceID]) async throws -> Set<DeviceID>

    /// Notes that these devices were seen now (opened their stream, acknowledged): they are not expired by
    /// ``expireDevices(unseenFor:limit:)`` until they have been unseen that long again. Unknown ids are ignored.
    func recordDevicesSeen(_ devices: [DeviceID]) async throws

    /// Removes up to `limit` devices not seen for `unseenFor` (as FCM drops tokens unused for 270 days), with their
    /// queues, subscriptions and device-group memberships (a group left without members is deleted); later sends to
    /// their tokens answer `NotRegistered`. Their unexpired pending messages count as dropped (`unregistered`).
    /// Returns how many devices were removed.
    func expireDevices(unseenFor: Duration, limit: Int) async throws -> Int

    /// Unregisters the device holding this secret (its messages, subscriptions and device-group memberships go with it;
    /// a group left without members is deleted). Returns the removed device, or nil if the secret is unknown. Later
    /// sends to its token find no device (`NotRegistered`).
    func unregisterDevice(secret: String) async throws -> Device?

    /// The device holding this secret, or nil (answer 401 on the stream).
    func authenticateDevice(secret: String) async throws -> Device?

    /// Looks tokens up, up to 1000 at once. The result has one entry per token, in order: nil for an unknown token
    /// (`NotRegistered`; the relay checks the format for `InvalidRegistration` first and the project for
    /// `MismatchSenderId` itself).
    func resolveTokens(_ tokens: [String]) async throws -> [Device?]

    // MARK: Queues

    /// Appends messages to device queues in one durable commit, applying the queue policy (collapse keys, the
    /// 4-key and 100-message limits, `deleted_messages`) atomically. One result per message, in order.
    /// Devices that got a stored message are reported to the commit observer after the commit.
    ///
    /// A message with a time to live of 0 is not stored (``EnqueueResult/transient(_:)``), and its result comes
    /// only once every stored row this node numbered before it has been handed to the streams (SQLite: it takes the
    /// writer's queue; PostgreSQL: it waits for the notification connection), so that a live stream never writes it
    /// before a stored message with a lower id: a `Last-Event-ID` naming it acknowledges every id below.
    func enqueue(_ messages: [NewMessage]) async throws -> [EnqueueResult]

    /// A number in sequence with stored ids, taken at once. Only a number: a time-to-live-0 message to deliver goes
    /// through ``enqueue(_:)``, which numbers it and keeps it behind the stored rows numbered before it.
    func nextTransientMessageID() -> MessageID

    /// The device's stored, unexpired messages with an id greater than `after` (all if nil), in id order, at most
    /// `limit`.
    func pendingMessages(for device: DeviceID, after: MessageID?, limit: Int) async throws -> [StoredMessage]

    /// Acknowledges (deletes) these messages of the device; unknown ids are ignored. Returns how many were deleted.
    /// Durable at return.
    @discardableResult
    func acknowledge(device: DeviceID, ids: [MessageID]) async throws -> Int

    /// Acknowledges every message of the device with an id up to and including `upTo` (`Last-Event-ID`).
    /// Returns how many were deleted. Durable at return.
    @discardableResult
    func acknowledge(device: DeviceID, upTo: MessageID) async throws -> Int

    /// Deletes up to `limit` expired messages, expired unexpanded topic messages and rotated keys past their grace
    /// period.
    /// The server calls it periodically; the report feeds metrics counters. SQLite looks for expired messages in at
    /// most 200,000 rows per call, resuming where the last call stopped (see `SQLiteStore.purge(limit:)`).
    func purge(limit: Int) async throws -> PurgeReport

    /// Queue gauges for metrics.
    func queueStatistics() async throws -> QueueStatistics

    // MARK: Topics

    /// Subscribes tokens of `project` to `topic` (created on first use), up to 1000 tokens, one result per token in
    /// order. Idempotent: an existing subscription keeps its date.
    func subscribe(tokens: [String], to topic: String, project: ProjectID) async throws -> [TopicMembershipResult]

    /// Unsubscribes tokens of `project` from `topic`, one result per token in order.
    func unsubscribe(tokens: [String], from topic: String, project: ProjectID) async throws -> [TopicMembershipResult]

    /// The topics a device is subscribed to, by name.
    func subscriptions(of device: DeviceID) async throws -> [TopicSubscription]

    /// Commits a topic or condition message (one row, durable at return) and returns its id (FCM's numeric topic
    /// `message_id`). The store expands it into the queues of the devices subscribed at this moment, in the
    /// background, in bounded batches, resuming after a restart without duplicates; devices are reported to the
    /// commit observer batch by batch. Throws ``StoreError/Code/invalidArgument`` for a zero time to live or a
    /// condition the compiler rejects.
    func enqueueTopicMessage(_ message: NewTopicMessage) async throws -> MessageID

    // MARK: Device groups (FCM's `notification_key`)

    /// Creates a device group of `project`, or adds members to one or removes members from one, in one durable
    /// commit; see ``DeviceGroupOutcome`` for the refusals, which change nothing. `create` generates the group's key.
    /// A group holds at most `FCMLimits.maxDeviceGroupMembers` (20) devices; one left without members is deleted.
    /// Adding a member twice or removing a device that is not a member is no error.
    func changeDeviceGroup(_ operation: DeviceGroupOperation, project: ProjectID) async throws -> DeviceGroupOutcome

    /// The key of `project`'s group named `name` (`GET /fcm/notification?notification_key_name=…`), or nil.
    func deviceGroupKey(name: String, project: ProjectID) async throws -> String?

    /// The group with this key and its members, or nil if there is none (a send to it answers `NotRegistered`).
    func deviceGroup(notificationKey: String) async throws -> DeviceGroup?

    // MARK: The hot path without tasks

    /// The project of this server key when the answer is in memory and current, else nil (then ask
    /// ``authenticateServerKey(_:)``). Never does I/O and never waits: the event-loop send path calls it.
    func cachedProject(serverKey key: String) -> Project?

    /// The project of this OAuth2 access token (FCM HTTP v1) when the answer is in memory and current, else nil
    /// (then ask ``authenticateAccessToken(_:)``). Never does I/O and never waits: the event-loop v1 send path calls
    /// it.
    func cachedProject(accessToken token: String) -> Project?

    /// The devices of these tokens, in order, when every one of them is in memory; else nil (then ask
    /// ``resolveTokens(_:)``). Never does I/O and never waits.
    func cachedDevices(tokens: [String]) -> [Device]?

    /// The device of this secret when the answer is in memory and current, else nil (then ask
    /// ``authenticateDevice(secret:)``). Never does I/O and never waits: the event-loop acknowledgement path calls it.
    func cachedDevice(secret: String) -> Device?

    /// ``acknowledge(device:ids:)`` without a task: `completion` gets the count once the deletion is durable (or the
    /// error), on the store's writer thread, or at once on the caller's thread when there is nothing to do. It must
    /// be quick: hand the result over, do not wait.
    func acknowledge(device: DeviceID, ids: [MessageID], completion: @escaping @Sendable (Result<Int, any Error>) -> Void)

    /// ``enqueue(_:)`` without a task: `completion` gets the results once the commit is durable (or the error),
    /// on the store's writer thread, or at once on the caller's thread when nothing needs storing or the store is
    /// closed. It must be quick: hand the result over, do not wait.
    func enqueue(_ messages: [NewMessage], completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void)

    /// ``authenticateDevice(secret:)`` without a task (a stream opening on an event loop): `completion` gets the
    /// device, or nil, on a thread of the store's (a reader's), or at once on the caller's thread when the answer is
    /// in memory. It must be quick: hand the result over, do not wait.
    func authenticateDevice(secret: String, completion: @escaping @Sendable (Result<Device?, any Error>) -> Void)

    /// ``resolveTokens(_:)`` without a task (a send whose tokens are not all in memory); `completion` as for
    /// ``authenticateDevice(secret:completion:)``.
    func resolveTokens(_ tokens: [String], completion: @escaping @Sendable (Result<[Device?], any Error>) -> Void)

    /// ``project(id:)`` without a task; `completion` as for ``authenticateDevice(secret:completion:)``.
    func project(id: ProjectID, completion: @escaping @Sendable (Result<Project?, any Error>) -> Void)

    /// ``pendingMessages(for:after:limit:)`` without a task (a stream's backlog): `completion` gets the rows on a
    /// thread of the store's (a reader's). It must be quick: hand the result over, do not wait.
    func pendingMessages(
        for device: DeviceID, after: MessageID?, limit: Int,
        completion: @escaping @Sendable (Result<[StoredMessage], any Error>) -> Void)

    /// ``acknowledge(device:upTo:)`` without a task (a stream's `Last-Event-ID`): `completion` gets the count once
    /// the deletion is durable, on the store's writer thread. It must be quick: hand the result over, do not wait.
    func acknowledge(device: DeviceID, upTo: MessageID, completion: @escaping @Sendable (Result<Int, any Error>) -> Void)

    /// ``deviceGroup(notificationKey:)`` without a task (a device-group send on an event loop); `completion` as for
    /// ``authenticateDevice(secret:completion:)``.
    func deviceGroup(
        notificationKey: String, completion: @escaping @Sendable (Result<DeviceGroup?, any Error>) -> Void)

    /// ``enqueueTopicMessage(_:)`` without a task (a topic or condition send on an event loop): `completion` gets
    /// the id once the row is durable (or the error), on the store's writer thread, or at once on the caller's thread
    /// when the store is closed. It must be quick: hand the result over, do not wait.
    func enqueueTopicMessage(
        _ message: NewTopicMessage, completion: @escaping @Sendable (Result<MessageID, any Error>) -> Void)

    // MARK: Notification and lifecycle

    /// Sets the function called after every commit that appended to device queues, with the appended rows
    /// (messages and `deleted_messages` markers, bodies included) in id order, so that live streams can write
    /// them without reading the store back. Rows the same commit removed again (a collapse key replaced within one
    /// group, the queue limit) may be among them: a live stream delivering one of those is harmless, the
    /// device's next stream reads the store. It runs on the store's writer thread: it must return quickly (hand
    /// the rows over, do not wait). Replaces the previous observer; nil removes it. A store that several nodes share
    /// (PostgreSQL) never calls it: its commits, this node's among them, come through
    /// ``setRemoteCommitObserver(_:)`` in commit order.
    func setCommitObserver(_ observer: (@Sendable ([StoredMessage]) -> Void)?)

    /// Why the store cannot commit: the engine's error (disk full, I/O error, read-only file, a damaged file, the
    /// database unreachable) when a write transaction failed for such a reason and none that proves room for
    /// messages has committed since (one that stored messages, or ``probeCommit()``; a small commit such as an
    /// acknowledgement can succeed on a full disk); nil while commits succeed. Read from memory, never waits:
    /// `/readyz` reads it per request.
    var commitFailure: StoreError? { get }

    /// Pages in the write-ahead log after the last commit, for engines that keep one in the node's files (SQLite):
    /// checkpoints copy them into the database file and let the log start over, unless a reader holds an old
    /// snapshot (a backup, a `sqlite3` shell inside a transaction), and then it grows. nil for the others
    /// (PostgreSQL). Read from memory. Feeds `pushrelay_store_wal_pages`.
    var walPages: Int? { get }

    /// Commits a write at least as large as a message (on SQLite a 64 KiB row; on PostgreSQL, whose failures are
    /// the server's, a one-row update), to learn whether the store can take messages again after
    /// ``commitFailure``: success clears it. The relay calls it periodically while the store is failing, so that a
    /// node taken out of a load balancer's rotation (its `/readyz` failing) comes back by itself once the cause goes
    /// away.
    func probeCommit() async throws

    /// Sets the function called after every commit that removed unexpired messages undelivered (replaced by a
    /// collapse key, cleared by the 100-message rule, deleted with their device), with how many and why; it feeds
    /// `pushrelay_messages_dropped_total`. It runs on the store's writer: it must return quickly. Replaces the
    /// previous observer; nil removes it.
    func setDropObserver(_ observer: (@Sendable (DroppedMessages) -> Void)?)

    /// Sets the function called when a node of the same database, this one included, committed rows for devices
    /// (PostgreSQL: one `NOTIFY` per committed batch, read back in commit order, which is id order), so that their
    /// live streams on this node write them; ``RemoteCommit/unknown`` when this node may have missed some (its
    /// listening connection was lost): then every live stream reads the store. Called on a store task: it must
    /// return quickly. A store that only one process serves (SQLite) never calls it: its commit observer has the
    /// rows, in commit order as well.
    func setRemoteCommitObserver(_ observer: (@Sendable (RemoteCommit) -> Void)?)

    /// Sets the function that says which of some devices hold a live stream on this node, so that the rows another
    /// node committed are read back only for those (a batch for devices none of which streams here costs no read);
    /// nil (the default) reads them for every device. Called on a store task: it must return quickly. A stream that
    /// attaches after the function answered reads the store from its cursor, which finds those rows committed. A
    /// store that only one process serves (SQLite) never calls it.
    func setLocalStreams(_ streaming: (@Sendable ([DeviceID]) -> [DeviceID])?)

    /// Tells the other nodes of the same database that a stream of `device` opened here (`attachment`: this node's
    /// number for it), so that an older stream of the device on another node ends, as a second stream on one node
    /// ends the first. Fire and forget: it returns at once, and a failure only leaves the older stream open until it
    /// ends by itself. The announcement comes back to this node too, as ``RemoteCommit/streamAnnounced(_:attachment:)``,
    /// and to the others as ``RemoteCommit/streamOpenedElsewhere(_:)``, all in one order. A store that only one
    /// process serves (SQLite) does nothing.
    func announceStream(device: DeviceID, attachment: UInt64)

    /// Finishes the writes already submitted, stops the background work and closes the engine. Later calls throw
    /// ``StoreError/closed``.
    func close() async
}

extension PushStore {
    /// No other node shares the store: nothing to observe.
    public func setRemoteCommitObserver(_ observer: (@Sendable (RemoteCommit) -> Void)?) {}

    /// No other node shares the store: nobody to tell.
    public func announceStream(device: DeviceID, attachment: UInt64) {}

    /// No other node shares the store: nothing is read back.
    public func setLocalStreams(_ streaming: (@Sendable ([DeviceID]) -> [DeviceID])?) {}

    /// Nothing in memory: every send takes the async path.
    public func cachedProject(serverKey key: String) -> Project? { nil }

    /// Nothing in memory: every v1 send takes the async path.
    public func cachedProject(accessToken token: String) -> Project? { nil }

    /// No write-ahead log in the node's files.
    public var walPages: Int? { nil }

    /// Nothing in memory: every send takes the async path.
    public func cachedDevices(tokens: [String]) -> [Device]? { nil }

    /// Nothing in memory: every acknowledgement takes the async path.
    public func cachedDevice(secret: String) -> Device? { nil }

    /// Runs ``acknowledge(device:ids:)`` in a task.
    public func acknowledge(
        device: DeviceID,
        ids: [MessageID],
        completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.acknowledge(device: device, ids: ids) }
    }

    /// Runs ``enqueue(_:)`` in a task.
    public func enqueue(
        _ messages: [NewMessage],
        completion: @escaping @Sendable (Result<[EnqueueResult], any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.enqueue(messages) }
    }

    /// Runs ``authenticateDevice(secret:)`` in a task.
    public func authenticateDevice(secret: String, completion: @escaping @Sendable (Result<Device?, any Error>) -> Void) {
        Self.complete(completion) { try await self.authenticateDevice(secret: secret) }
    }

    /// Runs ``resolveTokens(_:)`` in a task.
    public func resolveTokens(_ tokens: [String], completion: @escaping @Sendable (Result<[Device?], any Error>) -> Void) {
        Self.complete(completion) { try await self.resolveTokens(tokens) }
    }

    /// Runs ``project(id:)`` in a task.
    public func project(id: ProjectID, completion: @escaping @Sendable (Result<Project?, any Error>) -> Void) {
        Self.complete(completion) { try await self.project(id: id) }
    }

    /// Runs ``pendingMessages(for:after:limit:)`` in a task.
    public func pendingMessages(
        for device: DeviceID, after: MessageID?, limit: Int,
        completion: @escaping @Sendable (Result<[StoredMessage], any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.pendingMessages(for: device, after: after, limit: limit) }
    }

    /// Runs ``acknowledge(device:upTo:)`` in a task.
    public func acknowledge(
        device: DeviceID, upTo: MessageID, completion: @escaping @Sendable (Result<Int, any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.acknowledge(device: device, upTo: upTo) }
    }

    /// Runs ``deviceGroup(notificationKey:)`` in a task.
    public func deviceGroup(
        notificationKey: String, completion: @escaping @Sendable (Result<DeviceGroup?, any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.deviceGroup(notificationKey: notificationKey) }
    }

    /// Runs ``enqueueTopicMessage(_:)`` in a task.
    public func enqueueTopicMessage(
        _ message: NewTopicMessage, completion: @escaping @Sendable (Result<MessageID, any Error>) -> Void
    ) {
        Self.complete(completion) { try await self.enqueueTopicMessage(message) }
    }

    /// Runs `body` in a task and hands its result to `completion`: the task-free forms' default for stores without
    /// a writer thread of their own.
    private static func complete<T: Sendable>(
        _ completion: @escaping @Sendable (Result<T, any Error>) -> Void,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        Task {
            do {
                completion(.success(try await body()))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Rotates the server key with the default grace period of 24 hours.
    public func rotateServerKey(project name: String) async throws -> String {
        try await self.rotateServerKey(project: name, gracePeriod: .seconds(86_400))
    }
}

extension PushStore {
    /// Registers a device with no cap on the project's devices.
    public func registerDevice(project: ProjectID, app: String, platform: String) async throws -> DeviceRegistration {
        try await self.registerDevice(project: project, app: app, platform: platform, deviceLimit: nil)
    }
}
