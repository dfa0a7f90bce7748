extension SQLiteStore {
    /// See ``PushStore/registerDevice(project:app:platform:)``.
    public func registerDevice(
        project: ProjectID, app: String, platform: String, deviceLimit: Int?
    ) async throws -> DeviceRegistration {
        let credentials = self.context.configuration.credentials
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let counted = try connection.statement(
                "UPDATE projects SET device_count = device_count + 1 WHERE id = ?1 AND (?2 = 0 OR device_count < ?2)")
            try counted.bind(project.rawValue, at: 1)
            try counted.bind(Int64(max(deviceLimit ?? 0, 0)), at: 2)
            try counted.run()
            if connection.changes == 0 {
                let exists = try connection.statement("SELECT 1 FROM projects WHERE id = ?1")
                try exists.bind(project.rawValue, at: 1)
                let found = try exists.step()
                try exists.run()
                guard found else { throw StoreError.notFound("no project with id \(project)") }
                throw StoreError(
                    code: .resourceExhausted, message: "the project has reached its limit of \(deviceLimit ?? 0) devices")
            }
            let token = credentials.deviceToken()
            let secret = credentials.deviceSecret()
            let insert = try connection.statement(
                """
                INSERT INTO devices (project_id, token, secret_hash, app, platform, registered_at, last_seen_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING id
                """
            )
            try insert.bind(project.rawValue, at: 1)
            try insert.bind(token, at: 2)
            try insert.bind(KeyHash(of: secret).bytes, at: 3)
            try insert.bind(app, at: 4)
            try insert.bind(platform, at: 5)
            try insert.bind(transaction.nowMicros, at: 6)
            _ = try insert.step()
            let id = DeviceID(rawValue: insert.int64(0))
            try insert.run()
            let device = Device(
                id: id, project: project, token: token, app: app, platform: platform,
                registeredAt: StoreContext.date(micros: transaction.nowMicros)
            )
            return DeviceRegistration(device: device, secret: secret)
        }
    }

    /// See ``PushStore/unregisterDevice(secret:)``.
    public func unregisterDevice(secret: String) async throws -> Device? {
        let hash = KeyHash(of: secret)
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let select = try connection.statement(composed: Self.selectDevice + " WHERE secret_hash = ?1")
            try select.bind(hash.bytes, at: 1)
            guard try select.step(), hash.matches(select.blob(6)) else { return nil }
            let device = Self.device(from: select)
            try select.run()
            // Its pending messages go with it (ON DELETE CASCADE): count the unexpired ones as dropped.
            let pending = try connection.statement(
                "SELECT count(*) FROM messages WHERE device_id = ?1 AND kind = 0 AND expires_at > ?2")
            try pending.bind(device.id.rawValue, at: 1)
            try pending.bind(transaction.nowMicros, at: 2)
            _ = try pending.step()
            transaction.dropped.unregistered += Int(pending.int64(0))
            try pending.run()
            let topics = try transaction.topicIDs(subscribedBy: "[\(device.id.rawValue)]")
            let groups = try transaction.deviceGroupIDs(joinedBy: "[\(device.id.rawValue)]")
            let delete = try connection.statement("DELETE FROM devices WHERE id = ?1")
            try delete.bind(device.id.rawValue, at: 1)
            try delete.run()
            try transaction.deleteTopicsWithoutSubscribers(topics)
            try transaction.deleteDeviceGroupsWithoutMembers(groups)
            let uncount = try connection.statement("UPDATE projects SET device_count = device_count - 1 WHERE id = ?1")
            try uncount.bind(device.project.rawValue, at: 1)
            try uncount.run()
            transaction.evictDevice(device, secret: hash)
            transaction.discardQueueState(of: device.id)
            return device
        }
    }

    /// See ``PushStore/existingDevices(_:)``.
    public func existingDevices(_ devices: [DeviceID]) async throws -> Set<DeviceID> {
        var existing = Set<DeviceID>()
        for start in stride(from: 0, to: devices.count, by: 500) {
            let chunk = devices[start..<min(start + 500, devices.count)]
            let found = try await self.readers.read { connection throws(StoreError) -> [DeviceID] in
                let select = try connection.statement(
                    "SELECT id FROM devices WHERE id IN (SELECT value FROM json_each(?1))")
                try select.bind("[" + chunk.map { String($0.rawValue) }.joined(separator: ",") + "]", at: 1)
                var ids: [DeviceID] = []
                while try select.step() { ids.append(DeviceID(rawValue: select.int64(0))) }
                return ids
            }
            existing.formUnion(found)
        }
        return existing
    }

    /// See ``PushStore/recordDevicesSeen(_:)``.
    public func recordDevicesSeen(_ devices: [DeviceID]) async throws {
        guard !devices.isEmpty else { return }
        try await self.writer.write { transaction in
            let update = try transaction.connection.statement("UPDATE devices SET last_seen_at = ?2 WHERE id = ?1")
            for device in devices {
                try update.bind(device.rawValue, at: 1)
                try update.bind(transaction.nowMicros, at: 2)
                try update.run()
            }
        }
    }

    /// See ``PushStore/expireDevices(unseenFor:limit:)``.
    public func expireDevices(unseenFor: Duration, limit: Int) async throws -> Int {
        let age = StoreContext.micros(unseenFor)
        return try await self.writer.write { transaction in
            let connection = transaction.connection
            let cutoff = transaction.nowMicros &- age
            let select = try connection.statement("SELECT id FROM devices WHERE last_seen_at <= ?1 LIMIT ?2")
            try select.bind(cutoff, at: 1)
            try select.bind(Int64(max(limit, 0)), at: 2)
            var expired: [String] = []
            while try select.step() { expired.append(String(select.int64(0))) }
            guard !expired.isEmpty else { return 0 }
            let devices = "[" + expired.joined(separator: ",") + "]"
            // Their unexpired pending messages go with them (ON DELETE CASCADE): counted as dropped.
            let pending = try connection.statement(
                """
                SELECT count(*) FROM messages WHERE kind = 0 AND expires_at > ?2 AND device_id IN (
                    SELECT value FROM json_each(?1))
                """)
            try pending.bind(devices, at: 1)
            try pending.bind(transaction.nowMicros, at: 2)
            _ = try pending.step()
            let dropped = Int(pending.int64(0))
            try pending.run()
            let topics = try transaction.topicIDs(subscribedBy: devices)
            let groups = try transaction.deviceGroupIDs(joinedBy: devices)
            let delete = try connection.statement(
                "DELETE FROM devices WHERE id IN (SELECT value FROM json_each(?1)) RETURNING project_id")
            try delete.bind(devices, at: 1)
            var perProject: [Int64: Int64] = [:]
            while try delete.step() { perProject[delete.int64(0), default: 0] += 1 }
            try transaction.deleteTopicsWithoutSubscribers(topics)
            try transaction.deleteDeviceGroupsWithoutMembers(groups)
            let uncount = try connection.statement("UPDATE projects SET device_count = device_count - ?2 WHERE id = ?1")
            for (project, count) in perProject {
                try uncount.bind(project, at: 1)
                try uncount.bind(count, at: 2)
                try uncount.run()
            }
            let removed = perProject.values.reduce(0, +)
            if removed > 0 {
                transaction.dropped.unregistered += dropped
                transaction.authChanged = true
                transaction.discardQueueStates()
            }
            return Int(removed)
        }
    }

    /// See ``PushStore/authenticateDevice(secret:)``.
    public func authenticateDevice(secret: String) async throws -> Device? {
        try await withCheckedThrowingContinuation { continuation in
            self.authenticateDevice(secret: secret) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/authenticateDevice(secret:completion:)``: from memory or one read (``cachedOrRead(memory:read:completion:)``).
    public func authenticateDevice(secret: String, completion: @escaping @Sendable (Result<Device?, any Error>) -> Void) {
        let hash = KeyHash(of: secret)
        // `memory` answers nil for "not in memory": a device found is wrapped once more (the answer itself is optional).
        self.cachedOrRead(memory: { $0.device(secret: hash).map(Optional.some) }, read: { connection, cache, generation throws(StoreError) in
            let select = try connection.statement(composed: Self.selectDevice + " WHERE secret_hash = ?1")
            try select.bind(hash.bytes, at: 1)
            guard try select.step(), hash.matches(select.blob(6)) else { return nil }
            let device = Self.device(from: select)
            try select.run()
            cache.insertDevice(device, secret: hash, generation: generation)
            return device
        }, completion: completion)
    }

    /// See ``PushStore/resolveTokens(_:)``.
    public func resolveTokens(_ tokens: [String]) async throws -> [Device?] {
        try await withCheckedThrowingContinuation { continuation in
            self.resolveTokens(tokens) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/resolveTokens(_:completion:)``: from memory, or the tokens not in memory read in one job
    /// (``cachedOrRead(memory:read:completion:)``).
    public func resolveTokens(_ tokens: [String], completion: @escaping @Sendable (Result<[Device?], any Error>) -> Void) {
        self.cachedOrRead(memory: { cache in
            let devices = cache.devices(tokens: tokens)
            return devices.contains(where: { $0 == nil }) ? nil : devices
        }, read: { connection, cache, generation throws(StoreError) in
            var devices = cache.devices(tokens: tokens)
            var found: [Device] = []
            for index in devices.indices where devices[index] == nil {
                let select = try connection.statement(composed: Self.selectDevice + " WHERE token = ?1")
                try select.bind(tokens[index], at: 1)
                if try select.step() {
                    let device = Self.device(from: select)
                    try select.run()
                    devices[index] = device
                    found.append(device)
                }
            }
            cache.insertDevices(found, generation: generation)
            return devices
        }, completion: completion)
    }

    /// Columns of ``device(from:)``, plus the secret hash as column 6.
    static let selectDevice = "SELECT id, project_id, token, app, platform, registered_at, secret_hash FROM devices"

    /// A device from columns 0…5 of ``selectDevice``.
    static func device(from row: SQLiteStatement) -> Device {
        Device(
            id: DeviceID(rawValue: row.int64(0)),
            project: ProjectID(rawValue: row.int64(1)),
            token: row.text(2) ?? "",
            app: row.text(3) ?? "",
            platform: row.text(4) ?? "",
            registeredAt: StoreContext.date(micros: row.int64(5))
        )
    }
}
