import Testing

@testable import PushRelayStore

/// The writer's gathering wait (``GroupGather``): what it waits for and how long.
@Suite struct GroupGatherTests {
    @Test("no group yet: no wait")
    func startsWithoutWaiting() {
        let gather = GroupGather(maxWait: .milliseconds(1))
        #expect(gather.wait == .none)
    }

    @Test("the target is the largest of the last 32 groups")
    func targetIsTheLargestRecentGroup() {
        var gather = GroupGather(maxWait: .milliseconds(1))
        gather.committed(groupSize: 8, commitTime: .microseconds(200))
        for _ in 1..<GroupGather.window {
            gather.committed(groupSize: 3, commitTime: .microseconds(200))
            #expect(gather.wait.count == 8)
        }
        gather.committed(groupSize: 3, commitTime: .microseconds(200))
        #expect(gather.wait.count == 3, "the group of 8 has left the window")
        gather.committed(groupSize: 1, commitTime: .microseconds(200))
        #expect(gather.wait.count == 3)
    }

    @Test("it waits at most the last commit's duration, and never more than the maximum; a zero maximum never waits")
    func timeoutIsTheLastCommitCappedByTheMaximum() {
        var gather = GroupGather(maxWait: .milliseconds(1))
        gather.committed(groupSize: 4, commitTime: .microseconds(300))
        #expect(gather.wait == WriteQueue.Gather(count: 4, timeout: .microseconds(300)))
        gather.committed(groupSize: 4, commitTime: .milliseconds(5))
        #expect(gather.wait.timeout == .milliseconds(1))
        var never = GroupGather(maxWait: .zero)
        never.committed(groupSize: 4, commitTime: .milliseconds(5))
        #expect(never.wait.timeout == .zero)
    }
}
