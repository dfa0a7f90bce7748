import NIOCore
import PostgresNIO

extension PostgresStore {
    /// See ``PushStore/registerDevice(project:app:platform:)``.
    public func registerDevice(
        project: ProjectID, app: String, platform: String, deviceLimit: Int?
    ) async throws -> DeviceRegistration {
        let credentials = self.context.configuration.credentials
        let limit = Int64(max(deviceLimit ?? 0, 0))
        return try await self.writer.write { write in
            // The row lock serializes registrations of one project across nodes, so the cap is exact.
            let counted = try await write.rows(
                """
                UPDATE projects SET device_count = device_count + 1
                WHERE id = \(project.rawValue) AND (\(limit) = 0 OR device_count < \(limit)) RETURNING id
                """)
            if counted.isEmpty {
                guard try await !write.rows("SELECT 1 FROM projects WHERE id = \(project.rawValue)").isEmpty else {
                    throw StoreError.notFound("no project with id \(project)")
                }
                throw StoreError(code: .resourceExhausted, message: "the project has reached its limit of \(limit) devices")
            }
            let token = credentials.deviceToken()
            let secret = credentials.deviceSecret()
            let rows = try await write.rows(
                """
                INSERT INTO devices (project_id, token, secret_hash, app, platform, registered_at, last_seen_at)
                VALUES (\(project.rawValue), \(token), \(ByteBuffer(bytes: KeyHash(of: secret).bytes)), \(app),
                    \(platform), \(write.nowMicros), \(write.nowMicros))
                RETURNING id
                """
            )
            let device = Device(
                id: DeviceID(rawValue: try rows[0].decode(Int64.self)), project: project, token: token, app: app,
                platform: platform, registeredAt: StoreContext.date(micros: write.nowMicros))
            return DeviceRegistration(device: device, secret: secret)
        }
    }

    /// See ``PushStore/unregisterDevice(secret:)``.
    public func unregisterDevice(secret: String) async throws -> Device? {
        let hash = KeyHash(of: secret)
        return try await self.writer.write { write in
            // The pending messages go with the device (ON DELETE CASCADE): count the unexpired ones as dropped.
            let pending = try await write.rows(
                """
                SELECT count(*) FROM messages m JOIN devices d ON d.id = m.device_id
                WHERE d.secret_hash = \(ByteBuffer(bytes: hash.bytes)) AND m.kind = 0 AND m.expires_at > \(write.nowMicros)
                """)
            // Its topics' rows first, as every change to their subscriptions (deleteTopicsWithoutSubscribers).
            let subscribed = try await write.rows(
                """
                SELECT DISTINCT s.topic_id FROM subscriptions s JOIN devices d ON d.id = s.device_id
                WHERE d.secret_hash = \(ByteBuffer(bytes: hash.bytes))
                """)
            let topics = try await Self.lockTopics(
                try subscribed.map { try $0.decode(Int64.self) }, in: write, skipLocked: false)
            // Its device groups' rows too, as every change to their members (changeDeviceGroup).
            let joined = try await write.rows(
                """
                SELECT DISTINCT m.group_id FROM device_group_members m JOIN devices d ON d.id = m.device_id
                WHERE d.secret_hash = \(ByteBuffer(bytes: hash.bytes))
                """)
            let groups = try await Self.lockDeviceGroups(
                try joined.map { try $0.decode(Int64.self) }, in: write, skipLocked: false)
            let rows = try await write.rows(
                "DELETE FROM devices WHERE secret_hash = \(ByteBuffer(bytes: hash.bytes)) RETURNING \(unescaped: Self.deviceColumns)")
            guard let row = rows.first, let device = try Self.device(row, matching: hash) else { return nil }
            try await Self.deleteTopicsWithoutSubscribers(topics, in: write)
            try await Self.deleteDeviceGroupsWithoutMembers(groups, in: write)
            try await write.run(
                "UPDATE projects SET device_count = device_count - 1 WHERE id = \(device.project.rawValue)")
            write.dropped.unregistered += Int(try pending.first?.decode(Int64.self) ?? 0)
            write.evictedDevices.append((device, hash))
            return device
        }
    }

    /// See ``PushStore/existingDevices(_:)``.
    public func existingDevices(_ devices: [DeviceID]) async throws -> Set<DeviceID> {
        guard !devices.isEmpty else { return [] }
        let rows = try await self.rows(
            "SELECT id FROM devices WHERE id = ANY(\(devices.map(\.rawValue))::bigint[])")
        return Set(try rows.map { DeviceID(rawValue: try $0.decode(Int64.self)) })
    }

    /// See ``PushStore/recordDevicesSeen(_:)``.
    public func recordDevicesSeen(_ devices: [DeviceID]) async throws {
        guard !devices.isEmpty else { return }
        try await self.writer.write { write in
            try await write.run(
                """
                UPDATE devices SET last_seen_at = \(write.nowMicros)
                WHERE id = ANY(\(devices.map(\.rawValue))::bigint[])
                """)
        }
    }

    /// See ``PushStore/expireDevices(unseenFor:limit:)``.
    public func expireDevices(unseenFor: Duration, limit: Int) async throws -> Int {
        let age = StoreContext.micros(unseenFor)
        return try await self.writer.write { write in
            let cutoff = write.nowMicros &- age
            let expired = try await write.rows(
                """
                SELECT id, project_id FROM devices WHERE last_seen_at <= \(cutoff)
                ORDER BY last_seen_at LIMIT \(Int64(max(limit, 0))) FOR UPDATE SKIP LOCKED
                """)
            guard !expired.isEmpty else { return 0 }
            var ids: [Int64] = []
            var perProject: [Int64: Int64] = [:]
            for row in expired {
                let (id, project) = try row.decode((Int64, Int64).self)
                ids.append(id)
                perProject[project, default: 0] += 1
            }
            // Their unexpired pending messages go with them (ON DELETE CASCADE): counted as dropped.
            let pending = try await write.rows(
                """
                SELECT count(*) FROM messages
                WHERE device_id = ANY(\(ids)::bigint[]) AND kind = 0 AND expires_at > \(write.nowMicros)
                """)
            let subscribed = try await write.rows(
                "SELECT DISTINCT topic_id FROM subscriptions WHERE device_id = ANY(\(ids)::bigint[])"
            ).map { try $0.decode(Int64.self) }
            let topics = try await Self.lockTopics(subscribed, in: write, skipLocked: true)
            let joined = try await write.rows(
                "SELECT DISTINCT group_id FROM device_group_members WHERE device_id = ANY(\(ids)::bigint[])"
            ).map { try $0.decode(Int64.self) }
            let groups = try await Self.lockDeviceGroups(joined, in: write, skipLocked: true)
            try await write.run("DELETE FROM devices WHERE id = ANY(\(ids)::bigint[])")
            try await Self.deleteTopicsWithoutSubscribers(topics, in: write)
            try await Self.deleteDeviceGroupsWithoutMembers(groups, in: write)
            // Held by another transaction: left to the next purge.
            self.context.skippedTopics.remember(requested: subscribed, locked: topics)
            self.context.skippedDeviceGroups.remember(requested: joined, locked: groups)
            for (project, count) in perProject {
                try await write.run("UPDATE projects SET device_count = device_count - \(count) WHERE id = \(project)")
            }
            write.dropped.unregistered += Int(try pending.first?.decode(Int64.self) ?? 0)
            write.authChanged = true
            return ids.count
        }
    }

    /// See ``PushStore/authenticateDevice(secret:)``.
    public func authenticateDevice(secret: String) async throws -> Device? {
        let hash = KeyHash(of: secret)
        try await self.refreshAuthCacheIfDue()
        let cache = self.context.authCache
        if let device = cache.device(secret: hash) {
            return device
        }
        let generation = cache.generation
        let rows = try await self.rows(
            "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE secret_hash = \(ByteBuffer(bytes: hash.bytes))")
        guard let row = rows.first, let device = try Self.device(row, matching: hash) else { return nil }
        cache.insertDevice(device, secret: hash, generation: generation)
        return device
    }

    /// See ``PushStore/resolveTokens(_:)``: the uncached tokens in one query.
    public func resolveTokens(_ tokens: [String]) async throws -> [Device?] {
        try await self.refreshAuthCacheIfDue()
        let cache = self.context.authCache
        var devices = cache.devices(tokens: tokens)
        let missing = devices.indices.filter { devices[$0] == nil }
        guard !missing.isEmpty else { return devices }
        let generation = cache.generation
        let wanted = missing.map { tokens[$0] }
        var found: [String: Device] = [:]
        for row in try await self.rows(
            "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE token = ANY(\(wanted))")
        {
            let device = try Self.device(row)
            found[device.token] = device
        }
        for index in missing {
            devices[index] = found[tokens[index]]
        }
        cache.insertDevices(Array(found.values), generation: generation)
        return devices
    }

    /// See ``PushStore/cachedProject(serverKey:)``: from this node's cache (other nodes' changes clear it through
    /// `NOTIFY`, and the epoch is re-read at most every ``Configuration/authRecheckInterval``), so that a send whose
    /// key and tokens are known takes the event-loop path as on SQLite.
    public func cachedProject(serverKey key: String) -> Project? {
        self.context.authCache.cachedProject(
            serverKey: key, recheckInterval: self.context.configuration.authRecheckInterval,
            nowMicros: self.context.nowMicros)
    }

    /// See ``PushStore/cachedDevices(tokens:)``.
    public func cachedDevices(tokens: [String]) -> [Device]? {
        self.context.authCache.cachedDevices(tokens: tokens, recheckInterval: self.context.configuration.authRecheckInterval)
    }

    /// See ``PushStore/cachedDevice(secret:)``: from this node's cache (other nodes' changes clear it through the
    /// authentication epoch, as for server keys).
    public func cachedDevice(secret: String) -> Device? {
        self.context.authCache.cachedDevice(secret: secret, recheckInterval: self.context.configuration.authRecheckInterval)
    }

    /// Columns of ``device(_:)``, plus the secret hash as column 6.
    static let deviceColumns = "id, project_id, token, app, platform, registered_at, secret_hash"

    /// A device from columns 0…5 of ``deviceColumns``.
    static func device(_ row: PostgresRow) throws -> Device {
        let (id, project, token, app, platform, registeredAt, _) = try row.decode(
            (Int64, Int64, String, String, String, Int64, ByteBuffer).self)
        return Device(
            id: DeviceID(rawValue: id), project: ProjectID(rawValue: project), token: token, app: app,
            platform: platform, registeredAt: StoreContext.date(micros: registeredAt))
    }

    /// The device of the row if its secret hash matches `hash` (constant-time comparison).
    static func device(_ row: PostgresRow, matching hash: KeyHash) throws -> Device? {
        let (_, _, _, _, _, _, stored) = try row.decode((Int64, Int64, String, String, String, Int64, ByteBuffer).self)
        return hash.matches(Array(stored.readableBytesView)) ? try Self.device(row) : nil
    }
}
