import PushRelayCore

extension SQLiteStore {
    /// See ``PushStore/changeDeviceGroup(_:project:)``: the group and the tokens are read and the change written in
    /// one write transaction, so that the member count and the name check hold when it commits.
    public func changeDeviceGroup(_ operation: DeviceGroupOperation, project: ProjectID) async throws
        -> DeviceGroupOutcome
    {
        let newKey = self.context.configuration.credentials.notificationKey()
        return try await self.writer.write(isolated: true) { transaction in
            let connection = transaction.connection
            let group: DeviceGroupPlan.Group?
            let tokens: [String]
            switch operation {
            case .create(let name, let list):
                group = try Self.deviceGroup(
                    where: "project_id = ?1 AND name = ?2", project: project, text: name, in: connection)
                tokens = list
            case .add(let key, _, let list), .remove(let key, _, let list):
                group = try Self.deviceGroup(
                    where: "project_id = ?1 AND notification_key = ?2", project: project, text: key, in: connection)
                tokens = list
            }
            var devices: [DeviceGroupPlan.Lookup] = []
            devices.reserveCapacity(tokens.count)
            let select = try connection.statement("SELECT id, project_id FROM devices WHERE token = ?1")
            for token in tokens {
                try select.bind(token, at: 1)
                if try select.step() {
                    let (id, owner) = (select.int64(0), select.int64(1))
                    try select.run()
                    devices.append(owner == project.rawValue ? .device(id) : .otherProject)
                } else {
                    devices.append(.notRegistered)
                }
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
                if let replacing {
                    let delete = try connection.statement("DELETE FROM device_groups WHERE id = ?1")
                    try delete.bind(replacing, at: 1)
                    try delete.run()
                }
                let insert = try connection.statement(
                    """
                    INSERT INTO device_groups (project_id, name, notification_key, created_at) VALUES (?1, ?2, ?3, ?4)
                    RETURNING id
                    """)
                try insert.bind(project.rawValue, at: 1)
                try insert.bind(name, at: 2)
                try insert.bind(newKey, at: 3)
                try insert.bind(transaction.nowMicros, at: 4)
                _ = try insert.step()
                let id = insert.int64(0)
                try insert.run()
                try Self.insertMembers(members, group: id, in: transaction)
                return .done(notificationKey: newKey)
            case .add(let id, let members):
                try Self.insertMembers(members, group: id, in: transaction)
            case .remove(let id, let members, let deleteGroup):
                let delete = try connection.statement(
                    "DELETE FROM device_group_members WHERE group_id = ?1 AND device_id = ?2")
                for member in members {
                    try delete.bind(id, at: 1)
                    try delete.bind(member, at: 2)
                    try delete.run()
                }
                if deleteGroup { try transaction.deleteDeviceGroupsWithoutMembers([id]) }
            }
            return .done(notificationKey: group?.notificationKey ?? newKey)
        }
    }

    /// See ``PushStore/deviceGroupKey(name:project:)``.
    public func deviceGroupKey(name: String, project: ProjectID) async throws -> String? {
        try await self.readers.read { connection throws(StoreError) -> String? in
            let select = try connection.statement(
                """
                SELECT g.notification_key FROM device_groups g WHERE g.project_id = ?1 AND g.name = ?2
                    AND EXISTS (SELECT 1 FROM device_group_members m WHERE m.group_id = g.id)
                """)
            try select.bind(project.rawValue, at: 1)
            try select.bind(name, at: 2)
            guard try select.step() else { return nil }
            let key = select.text(0)
            try select.run()
            return key
        }
    }

    /// See ``PushStore/deviceGroup(notificationKey:)``: the group and its members in one statement (one snapshot).
    public func deviceGroup(notificationKey: String) async throws -> DeviceGroup? {
        try await withCheckedThrowingContinuation { continuation in
            self.deviceGroup(notificationKey: notificationKey) { continuation.resume(with: $0) }
        }
    }

    /// See ``PushStore/deviceGroup(notificationKey:completion:)``: read on a reader thread, `completion` there.
    public func deviceGroup(
        notificationKey: String, completion: @escaping @Sendable (Result<DeviceGroup?, any Error>) -> Void
    ) {
        self.readers.read({ connection throws(StoreError) -> DeviceGroup? in
            // Columns 0…5 are those of ``selectDevice``, for ``device(from:)``.
            let select = try connection.statement(
                """
                SELECT d.id, d.project_id, d.token, d.app, d.platform, d.registered_at, g.name, g.project_id
                FROM device_groups g JOIN device_group_members m ON m.group_id = g.id JOIN devices d ON d.id = m.device_id
                WHERE g.notification_key = ?1 ORDER BY m.id
                """)
            try select.bind(notificationKey, at: 1)
            var group = DeviceGroup(project: ProjectID(rawValue: 0), name: "", notificationKey: notificationKey, members: [])
            while try select.step() {
                group.members.append(Self.device(from: select))
                group.name = select.text(6) ?? ""
                group.project = ProjectID(rawValue: select.int64(7))
            }
            return group.members.isEmpty ? nil : group
        }, completion: { completion($0.mapError { $0 }) })
    }

    /// The project's group matching `condition` (`?1` the project, `?2` the name or the key) with its members' ids.
    private static func deviceGroup(
        where condition: String,
        project: ProjectID,
        text: String,
        in connection: SQLiteConnection
    ) throws(StoreError) -> DeviceGroupPlan.Group? {
        let select = try connection.statement(
            composed: "SELECT id, name, notification_key FROM device_groups WHERE " + condition)
        try select.bind(project.rawValue, at: 1)
        try select.bind(text, at: 2)
        guard try select.step() else { return nil }
        var group = DeviceGroupPlan.Group(
            id: select.int64(0), name: select.text(1) ?? "", notificationKey: select.text(2) ?? "", members: [])
        try select.run()
        let members = try connection.statement("SELECT device_id FROM device_group_members WHERE group_id = ?1")
        try members.bind(group.id, at: 1)
        while try members.step() { group.members.insert(members.int64(0)) }
        return group
    }

    private static func insertMembers(
        _ devices: [Int64], group: Int64, in transaction: WriteTransaction
    ) throws(StoreError) {
        let insert = try transaction.connection.statement(
            "INSERT INTO device_group_members (group_id, device_id, added_at) VALUES (?1, ?2, ?3)")
        for device in devices {
            try insert.bind(group, at: 1)
            try insert.bind(device, at: 2)
            try insert.bind(transaction.nowMicros, at: 3)
            try insert.run()
        }
    }
}
