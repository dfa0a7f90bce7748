import NIOConcurrencyHelpers
import Testing

@testable import PushRelayStore

/// `PostgresStore.race`, the deadline of every PostgreSQL read: a query on a server that stopped answering may
/// ignore its cancellation, and the caller must be answered at the deadline anyway.
@Suite("PostgreSQL read deadline")
struct PostgresReadRaceTests {
    @Test("the body's value when it comes first; unavailable at the deadline when the body never ends")
    func deadline() async throws {
        #expect(try await PostgresStore.race(timeout: .seconds(30)) { 7 } == 7)
        await #expect(throws: StoreError.self) {
            try await PostgresStore.race(timeout: .seconds(30)) { () async throws -> Int in throw StoreError.closed }
        }

        // A body that ignores cancellation (a query on a frozen server): parked until the test lets it go.
        let parked = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        let error = await #expect(throws: StoreError.self) {
            try await PostgresStore.race(timeout: .milliseconds(200)) { () async -> Int in
                await withCheckedContinuation { continuation in parked.withLockedValue { $0 = continuation } }
                return 1
            }
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("did not answer a read") == true)
        parked.withLockedValue { $0 }?.resume()
    }
}
