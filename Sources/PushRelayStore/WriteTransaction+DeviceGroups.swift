extension WriteTransaction {
    /// The device groups that the devices in `devices` (a JSON array of ids) are members of. Read before the devices
    /// are removed, for ``deleteDeviceGroupsWithoutMembers(_:)`` after.
    func deviceGroupIDs(joinedBy devices: String) throws(StoreError) -> [Int64] {
        let select = try self.connection.statement(
            "SELECT DISTINCT group_id FROM device_group_members WHERE device_id IN (SELECT value FROM json_each(?1))")
        try select.bind(devices, at: 1)
        var ids: [Int64] = []
        while try select.step() { ids.append(select.int64(0)) }
        return ids
    }

    /// Deletes the device groups among `ids` that have no member any more. FCM deletes a group with its last member
    /// (removed, unregistered or expired): its key then answers `NotRegistered` and its name is free for a new
    /// `create`.
    func deleteDeviceGroupsWithoutMembers(_ ids: [Int64]) throws(StoreError) {
        guard !ids.isEmpty else { return }
        let delete = try self.connection.statement(
            """
            DELETE FROM device_groups WHERE id = ?1
                AND NOT EXISTS (SELECT 1 FROM device_group_members WHERE group_id = ?1)
            """)
        for id in ids {
            try delete.bind(id, at: 1)
            try delete.run()
        }
    }
}
