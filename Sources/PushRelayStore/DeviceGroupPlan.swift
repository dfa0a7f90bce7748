/// The decision of one ``DeviceGroupOperation`` from what the store holds, the same for both engines: each looks the
/// group and the tokens up in its write transaction, asks ``plan(_:group:devices:maxMembers:)``, and applies the
/// step it returns.
enum DeviceGroupPlan {
    /// The group an operation names, as the store holds it.
    struct Group {
        var id: Int64
        var name: String
        var notificationKey: String
        /// The member devices' ids.
        var members: Set<Int64>
    }

    /// One token, looked up in the project.
    enum Lookup {
        /// A device of the project.
        case device(Int64)
        /// No device has this token.
        case notRegistered
        /// A device of another project.
        case otherProject
    }

    /// What to write.
    enum Step: Equatable {
        /// Insert a group with these members (after deleting the member-less group of the same name, `replacing`, that
        /// an interrupted removal may have left).
        case create(members: [Int64], replacing: Int64?)
        /// Insert these members into the group.
        case add(group: Int64, members: [Int64])
        /// Delete these members; `deleteGroup` when none is left.
        case remove(group: Int64, members: [Int64], deleteGroup: Bool)
    }

    /// What the operation does: write a step, or refuse with an outcome (nothing written).
    enum Decision: Equatable {
        case write(Step)
        case refuse(DeviceGroupOutcome)
    }

    /// The step to write, or the outcome that refuses the operation (nothing written). `group` is the project's
    /// group of the operation's name (`create`) or key (`add`, `remove`); a group without members counts as none.
    /// `devices` has one entry per token of the operation, in order.
    static func plan(
        _ operation: DeviceGroupOperation,
        group: Group?,
        devices: [Lookup],
        maxMembers: Int
    ) -> Decision {
        let live = group.flatMap { $0.members.isEmpty ? nil : $0 }
        switch operation {
        case .create(_, let tokens):
            if live != nil { return .refuse(.nameTaken) }
            let members: [Int64]
            switch Self.members(tokens, devices) {
            case .found(let found): members = found
            case .refused(let refusal): return .refuse(refusal)
            }
            guard members.count <= maxMembers else { return .refuse(.tooManyMembers) }
            return .write(.create(members: members, replacing: group?.id))
        case .add(_, let name, let tokens):
            guard let live else { return .refuse(.notFound) }
            if let name, name != live.name { return .refuse(.nameMismatch) }
            let joining: [Int64]
            switch Self.members(tokens, devices) {
            case .found(let found): joining = found.filter { !live.members.contains($0) }
            case .refused(let refusal): return .refuse(refusal)
            }
            guard live.members.count + joining.count <= maxMembers else { return .refuse(.tooManyMembers) }
            return .write(.add(group: live.id, members: joining))
        case .remove(_, let name, let tokens):
            guard let live else { return .refuse(.notFound) }
            if let name, name != live.name { return .refuse(.nameMismatch) }
            var leaving: [Int64] = []
            for (token, lookup) in zip(tokens, devices) {
                switch lookup {
                case .device(let id): if live.members.contains(id) { leaving.append(id) }
                case .notRegistered: continue
                case .otherProject: return .refuse(.tokenOfAnotherProject(token))
                }
            }
            let left = live.members.subtracting(leaving)
            return .write(.remove(group: live.id, members: leaving, deleteGroup: left.isEmpty))
        }
    }

    /// The devices of `tokens`, each once, or the first token that is not one of the project's.
    private enum Members {
        case found([Int64])
        case refused(DeviceGroupOutcome)
    }

    private static func members(_ tokens: [String], _ devices: [Lookup]) -> Members {
        var ids: [Int64] = []
        var seen = Set<Int64>()
        for (token, lookup) in zip(tokens, devices) {
            switch lookup {
            case .device(let id): if seen.insert(id).inserted { ids.append(id) }
            case .notRegistered: return .refused(.tokenNotRegistered(token))
            case .otherProject: return .refused(.tokenOfAnotherProject(token))
            }
        }
        return .found(ids)
    }
}
