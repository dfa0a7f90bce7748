import Testing
@testable import PushRelayStore

/// The device-group decisions both engines share (``DeviceGroupPlan``), without a database: among them the cases the
/// store suites cannot reach on purpose, such as a group that a removal left without members (device expiry on
/// PostgreSQL skips a group another transaction holds), which counts as none.
@Suite("Store: device-group decisions")
struct DeviceGroupPlanTests {
    static let group = DeviceGroupPlan.Group(id: 7, name: "u", notificationKey: "APA91bkey", members: [1, 2])
    static let empty = DeviceGroupPlan.Group(id: 8, name: "u", notificationKey: "APA91bold", members: [])

    @Test("create: a taken name is refused; a group left without members is replaced; members each once")
    func create() {
        let operation = DeviceGroupOperation.create(name: "u", tokens: ["a", "b", "a"])
        let devices: [DeviceGroupPlan.Lookup] = [.device(3), .device(4), .device(3)]
        #expect(DeviceGroupPlan.plan(operation, group: Self.group, devices: devices, maxMembers: 20) == .refuse(.nameTaken))
        #expect(DeviceGroupPlan.plan(operation, group: Self.empty, devices: devices, maxMembers: 20)
            == .write(.create(members: [3, 4], replacing: 8)))
        #expect(DeviceGroupPlan.plan(operation, group: nil, devices: devices, maxMembers: 20)
            == .write(.create(members: [3, 4], replacing: nil)))
        #expect(DeviceGroupPlan.plan(operation, group: nil, devices: devices, maxMembers: 1) == .refuse(.tooManyMembers))
        #expect(DeviceGroupPlan.plan(operation, group: nil, devices: [.device(3), .notRegistered, .otherProject], maxMembers: 20)
            == .refuse(.tokenNotRegistered("b")))
        #expect(DeviceGroupPlan.plan(operation, group: nil, devices: [.otherProject, .notRegistered, .device(3)], maxMembers: 20)
            == .refuse(.tokenOfAnotherProject("a")))
    }

    @Test("add: an unknown or member-less group is not found; the name must match; members already in count once")
    func add() {
        let add = DeviceGroupOperation.add(notificationKey: "APA91bkey", name: nil, tokens: ["a", "b"])
        #expect(DeviceGroupPlan.plan(add, group: nil, devices: [.device(2), .device(3)], maxMembers: 20) == .refuse(.notFound))
        #expect(DeviceGroupPlan.plan(add, group: Self.empty, devices: [.device(2), .device(3)], maxMembers: 20) == .refuse(.notFound))
        #expect(DeviceGroupPlan.plan(add, group: Self.group, devices: [.device(2), .device(3)], maxMembers: 20)
            == .write(.add(group: 7, members: [3])))
        #expect(DeviceGroupPlan.plan(add, group: Self.group, devices: [.device(2), .device(3)], maxMembers: 3)
            == .write(.add(group: 7, members: [3])))
        #expect(DeviceGroupPlan.plan(add, group: Self.group, devices: [.device(4), .device(3)], maxMembers: 3)
            == .refuse(.tooManyMembers))
        let named = DeviceGroupOperation.add(notificationKey: "APA91bkey", name: "v", tokens: ["a"])
        #expect(DeviceGroupPlan.plan(named, group: Self.group, devices: [.device(3)], maxMembers: 20) == .refuse(.nameMismatch))
    }

    @Test("remove: unknown tokens are no members; another project's token is refused; the last member takes the group")
    func remove() {
        let remove = DeviceGroupOperation.remove(notificationKey: "APA91bkey", name: "u", tokens: ["a", "x", "c"])
        #expect(DeviceGroupPlan.plan(remove, group: Self.group, devices: [.device(1), .notRegistered, .device(9)], maxMembers: 20)
            == .write(.remove(group: 7, members: [1], deleteGroup: false)))
        #expect(DeviceGroupPlan.plan(remove, group: Self.group, devices: [.device(1), .notRegistered, .device(2)], maxMembers: 20)
            == .write(.remove(group: 7, members: [1, 2], deleteGroup: true)))
        #expect(DeviceGroupPlan.plan(remove, group: Self.group, devices: [.device(1), .otherProject, .device(2)], maxMembers: 20)
            == .refuse(.tokenOfAnotherProject("x")))
        #expect(DeviceGroupPlan.plan(remove, group: Self.empty, devices: [.device(1), .notRegistered, .device(2)], maxMembers: 20)
            == .refuse(.notFound))
    }
}
