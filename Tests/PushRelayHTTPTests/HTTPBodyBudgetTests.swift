import Testing

@testable import PushRelayHTTP

/// The server-wide budget of held request-body bytes, without sockets: what a request gets, who waits, who is
/// woken.
@Suite("HTTP body budget")
struct HTTPBodyBudgetTests {
    /// Counts the wake-ups of one waiter (`release` calls them on the test's own thread).
    private final class Wakes: @unchecked Sendable {
        private(set) var value = 0
        func wake() { value += 1 }
    }

    private final class Waiter {}

    @Test("bytes that fit are taken whole; past the capacity a request gets what is left and waits")
    func partialGrants() {
        let budget = HTTPBodyBudget(capacity: 100)
        let (a, b) = (Waiter(), Waiter())
        let wakes = Wakes()
        #expect(budget.acquire(upTo: 60, held: 0, waiter: ObjectIdentifier(a)) { wakes.wake() } == 60)
        #expect(budget.acquire(upTo: 30, held: 0, waiter: ObjectIdentifier(b)) { wakes.wake() } == 30)
        #expect(budget.acquire(upTo: 30, held: 30, waiter: ObjectIdentifier(b)) { wakes.wake() } == 10, "what is left")
        #expect(budget.used == 100)
        #expect(budget.acquire(upTo: 5, held: 40, waiter: ObjectIdentifier(b)) { wakes.wake() } == 0, "nothing left")
        #expect(wakes.value == 0)
        // However little is given back, the waiter is called, and can take exactly that.
        budget.release(3)
        #expect(wakes.value == 1)
        #expect(budget.acquire(upTo: 20, held: 40, waiter: ObjectIdentifier(b)) { wakes.wake() } == 3)
        #expect(budget.used == 100)
        // Woken once per registration: a release with nobody waiting wakes nobody.
        budget.release(60)
        #expect(wakes.value == 2)
        budget.release(10)
        #expect(wakes.value == 2)
        #expect(budget.used == 30)
    }

    @Test("the only holder takes all it asks for, past the capacity (one body larger than the budget still arrives)")
    func soleHolder() {
        let budget = HTTPBodyBudget(capacity: 100)
        let waiter = Waiter()
        #expect(budget.acquire(upTo: 80, held: 0, waiter: ObjectIdentifier(waiter)) {} == 80)
        #expect(budget.acquire(upTo: 80, held: 80, waiter: ObjectIdentifier(waiter)) {} == 80)
        #expect(budget.used == 160)
    }

    @Test("a cancelled waiter is not called; no capacity means no bound")
    func cancelAndUnbounded() {
        let budget = HTTPBodyBudget(capacity: 10)
        let (a, b) = (Waiter(), Waiter())
        let wakes = Wakes()
        _ = budget.acquire(upTo: 10, held: 0, waiter: ObjectIdentifier(a)) {}
        #expect(budget.acquire(upTo: 5, held: 0, waiter: ObjectIdentifier(b)) { wakes.wake() } == 0)
        budget.cancelWait(ObjectIdentifier(b))
        budget.release(10)
        #expect(wakes.value == 0)
        let unbounded = HTTPBodyBudget(capacity: nil)
        #expect(unbounded.acquire(upTo: 1_000_000, held: 0, waiter: ObjectIdentifier(a)) {} == 1_000_000)
    }
}
