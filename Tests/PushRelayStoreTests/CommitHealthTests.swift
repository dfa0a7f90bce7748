import Logging
import Testing
@testable import PushRelayStore

@Suite("Store: commit health")
struct CommitHealthTests {
    let health = CommitHealth(logger: Logger(label: "test"))

    @Test("an engine failure is kept until a commit that proves room; a small commit does not end it")
    func onlyACommitProvingCapacityEndsAFailure() {
        #expect(self.health.current == nil)
        self.health.failed(StoreError(code: .unavailable, message: "database or disk is full", engineCode: 13))
        #expect(self.health.current?.message == "database or disk is full")
        // An acknowledgement reusing a free page on a full disk.
        self.health.committed(provingCapacity: false)
        #expect(self.health.current?.code == .unavailable)
        // Messages stored, or the probe.
        self.health.committed(provingCapacity: true)
        #expect(self.health.current == nil)
    }

    @Test("a request's own refusal leaves the store healthy; a later engine failure replaces an earlier one")
    func refusalsAreNotEngineFailures() {
        for code in [StoreError.Code.notFound, .alreadyExists, .invalidArgument] {
            self.health.failed(StoreError(code: code, message: "\(code)"))
            #expect(self.health.current == nil, "\(code)")
        }
        self.health.failed(CancellationErrorStandIn())
        #expect(self.health.current == nil)
        self.health.failed(StoreError(code: .unavailable, message: "disk I/O error"))
        self.health.failed(StoreError(code: .corrupt, message: "database disk image is malformed"))
        #expect(self.health.current?.code == .corrupt)
    }

    struct CancellationErrorStandIn: Error {}
}
