import PostgresNIO
import PushRelayCore

extension PostgresStore {
    /// See ``PushStore/changeDeviceGroup(_:project:)``.
    ///
    /// Every change to a group's members holds the group's row first (`FOR UPDATE`), as an unregistration does
    /// (``lockDeviceGroups(_:in:skipLocked:)``): two nodes adding to one group count its members one after the other,
    /// and the deletion of a group left without members sees every other change committed. The tokens' devices are
    /// held `FOR KEY SHARE` until the commit, so that none is removed between the look-up and the insert of its
    /// membership (a removal that came first leaves no row to hold: the token is then not registered). A group a
    /// removal left without members (device expiry skips a group another transaction holds, and the next purge
    /// deletes it) counts as none meanwhile.
    public func changeDeviceGroup(_ operation: DeviceGroupOperation, project: ProjectID) async throws
        -> DeviceGroupOutcome
    {
        let newKey = self.context.configuration.credentials.notificationKey()
        return try await self.writer.write { write in
            let groupRows: [PostgresRow]
            let tokens: [String]
            switch operation {
            case .create(let name, let list):
                groupRows = try await write.rows(
                    """
                    SELECT id, name, notification_key FROM device_groups
                    WHERE project_id = \(project.rawValue) AND name = \(name) FOR UPDATE
                    """)
                tokens = list
            case .add(let key, _, let list), .remove(let key, _, let list):
                groupRows = try await write.rows(
                    """
                    SELECT id, name, notification_key FROM device_groups
                    WHERE project_id = \(project.rawValue) AND notification_key = \(key) FOR UPDATE
                    """)
                tokens = list
            }
            var group: DeviceGroupPlan.Group?
            if let row = groupRows.first {
                let (id, name, key) = try row.decode((Int64, String, String).self)
                let members = try await write.rows("SELECT device_id FROM device_group_members WHERE group_id = \(id)")
                group = DeviceGroupPlan.Group(
                    id: id, name: name, notificationKey: key, members: Set(try members.map { try $0.decode(Int64.self) }))
            }
            var found: [String: (id: Int64, project: Int64)] = [:]
            for row in try await write.rows(
                "SELECT token, id, project_id FROM devices WHERE token = ANY(\(tokens)) ORDER BY id FOR KEY SHARE")
            {
                let (token, id, owner) = try row.decode((String, Int64, Int64).self)
                found[token] = (id, owner)
            }
            let devices: [DeviceGroupPlan.Lookup] = tokens.map { token in
                guard let device = found[token] else { return .notRegistered }
                return device.project == project.rawValue ? .device(device.id) : .otherProject
            }
            let step: DeviceGroupPlan.Step
            switch DeviceGroupPlan.plan(
                operation, group: group, devices: devices, maxMembers: FCMLimits.maxDeviceGroupMembers)
            {
            case .refuse(let refusal): return refusal
            case .write(let planned): step = planned
            }
            switch step {
            case .create(let members, let replacing):
                guard case .create(let name, _) = operation else { preconditionFailure("a create step for \(operation)") }
                if let replacing { try await write.run("DELETE FROM device_groups WHERE id = \(replacing)") }
                // A create of the same name by another node that committed meanwhile makes this one insert nothing.
                let inserted = try await write.rows(
                    """
                    INSERT INTO device_groups (project_id, name, notification_key, created_at)
                    VALUES (\(project.rawValue), \(name), \(newKey), \(write.nowMicros))
                    ON CONFLICT (project_id, name) DO NOTHING RETURNING id
                    """)
                guard let id = try inserted.first?.decode(Int64.self) else { return .nameTaken }
                try await Self.insertMembers(members, group: id, in: write)
                return .done(notificationKey: newKey)
            case .add(let id, let members):
                try await Self.insertMembers(members, group: id, in: write)
            case .remove(let id, let members, let deleteGroup):
                try await write.run(
                    "DELETE FROM device_group_members WHERE group_id = \(id) AND device_id = ANY(\(members)::bigint[])")
                if deleteGroup { try await Self.deleteDeviceGroupsWithoutMembers([id], in: write) }
            }
            return .done(notificationKey: group?.notificationKey ?? newKey)
        }
    }

    /// See ``PushStore/deviceGroupKey(name:project:)``.
    public func deviceGroupKey(name: String, project: ProjectID) async throws -> String? {
        let rows = try await self.rows(
            """
            SELECT g.notification_key FROM device_groups g WHERE g.project_id = \(project.rawValue) AND g.name = \(name)
                AND EXISTS (SELECT 1 FROM device_group_members m WHERE m.group_id = g.id)
            """)
        do {
            return try rows.first?.decode(String.self)
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// See ``PushStore/deviceGroup(notificationKey:)``: the group and its members in one statement (one snapshot).
    public func deviceGroup(notificationKey: String) async throws -> DeviceGroup? {
        let rows = try await self.rows(
            """
            SELECT d.id, d.project_id, d.token, d.app, d.platform, d.registered_at, d.secret_hash, g.name, g.project_id
            FROM device_groups g JOIN device_group_members m ON m.group_id = g.id JOIN devices d ON d.id = m.device_id
            WHERE g.notification_key = \(notificationKey) ORDER BY m.id
            """)
        do {
            var group = DeviceGroup(project: ProjectID(rawValue: 0), name: "", notificationKey: notificationKey, members: [])
            for row in rows {
                group.members.append(try Self.device(row))
                let (_, _, _, _, _, _, _, name, project) = try row.decode(
                    (Int64, Int64, String, String, String, Int64, ByteBuffer, String, Int64).self)
                group.name = name
                group.project = ProjectID(rawValue: project)
            }
            return group.members.isEmpty ? nil : group
        } catch {
            throw PostgresStoreContext.storeError(error)
        }
    }

    /// Locks the rows of device groups `ids` (in id order, so that two transactions locking several never deadlock)
    /// and returns those it locked: all, waiting for their holders, or with `skipLocked` only those nobody holds (for
    /// device expiry, which holds the devices first: waiting there could deadlock with an `add` that holds its group
    /// and waits for the device; a group skipped is checked again by the next purge,
    /// ``PostgresStoreContext/skippedDeviceGroups``, and counts as none meanwhile if it was left without members).
    static func lockDeviceGroups(_ ids: [Int64], in write: PostgresWriteContext, skipLocked: Bool) async throws
        -> [Int64]
    {
        guard !ids.isEmpty else { return [] }
        let rows = try await write.rows(
            """
            SELECT id FROM device_groups WHERE id = ANY(\(ids)::bigint[]) ORDER BY id
            FOR UPDATE \(unescaped: skipLocked ? "SKIP LOCKED" : "")
            """)
        return try rows.map { try $0.decode(Int64.self) }
    }

    /// Deletes the device groups among `ids` that have no member any more (FCM deletes a group with its last member).
    /// The caller holds their rows (``lockDeviceGroups(_:in:skipLocked:)``), so every other change to their members
    /// has committed, and this statement, with a snapshot of its own, sees it.
    static func deleteDeviceGroupsWithoutMembers(_ ids: [Int64], in write: PostgresWriteContext) async throws {
        guard !ids.isEmpty else { return }
        try await write.run(
            """
            DELETE FROM device_groups g WHERE g.id = ANY(\(ids)::bigint[])
                AND NOT EXISTS (SELECT 1 FROM device_group_members m WHERE m.group_id = g.id)
            """)
    }

    private static func insertMembers(_ devices: [Int64], group: Int64, in write: PostgresWriteContext) async throws {
        guard !devices.isEmpty else { return }
        try await write.run(
            """
            INSERT INTO device_group_members (group_id, device_id, added_at)
            SELECT \(group), u.device, \(write.nowMicros) FROM unnest(\(devices)::bigint[]) WITH ORDINALITY AS u (device, n)
            ORDER BY u.n ON CONFLICT DO NOTHING
            """)
    }
}
