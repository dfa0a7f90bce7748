import Testing

@testable import PushRelayServer

@Suite("StreamTicketBook")
struct StreamTicketBookTests {
    private let start = ContinuousClock.now

    @Test("a ticket stands for its secret once; a used, unknown or expired ticket is refused")
    func singleUseAndExpiry() {
        var book = StreamTicketBook(lifetime: .seconds(30), capacity: 8)
        var generator = SystemRandomNumberGenerator()
        let ticket = book.issue(secret: "prd_secret", now: start, using: &generator)!
        #expect(ticket.hasPrefix("tkt_") && ticket.utf8.count == 47)
        #expect(book.redeem(ticket, now: start + .seconds(29)) == "prd_secret")
        #expect(book.redeem(ticket, now: start + .seconds(29)) == nil)  // used
        #expect(book.redeem("tkt_unknown", now: start) == nil)
        let late = book.issue(secret: "prd_secret", now: start, using: &generator)!
        #expect(book.redeem(late, now: start + .seconds(30)) == nil)  // expired, and forgotten
        #expect(book.count == 0)
        let other = book.issue(secret: "prd_other", now: start, using: &generator)!
        #expect(other != ticket)
        #expect(book.redeem(other, now: start) == "prd_other")
    }

    @Test("at most capacity tickets are outstanding; expired ones make room")
    func capacity() {
        var book = StreamTicketBook(lifetime: .seconds(30), capacity: 2)
        var generator = SystemRandomNumberGenerator()
        #expect(book.issue(secret: "a", now: start, using: &generator) != nil)
        #expect(book.issue(secret: "b", now: start + .seconds(10), using: &generator) != nil)
        #expect(book.issue(secret: "c", now: start + .seconds(20), using: &generator) == nil)
        // The first expires at 30 s: purged to make room for the next.
        let third = book.issue(secret: "c", now: start + .seconds(30), using: &generator)
        #expect(third != nil && book.count == 2)
    }

    /// audit-j: one device asking in a loop held all 65,536 tickets of the node; every other device got 503.
    @Test("one device holds at most perDevice tickets: its newest replace its oldest, others still get theirs")
    func oneDeviceCannotFillTheBook() {
        var book = StreamTicketBook(lifetime: .seconds(30), capacity: 8, perDevice: 3)
        var generator = SystemRandomNumberGenerator()
        let tickets = (0..<100).map { _ in book.issue(secret: "prd_greedy", now: start, using: &generator)! }
        #expect(book.count == 3 && book.outstanding(for: "prd_greedy") == 3)
        #expect(book.redeem(tickets[0], now: start) == nil, "replaced by a newer one")
        #expect(book.redeem(tickets[99], now: start) == "prd_greedy")
        #expect(book.outstanding(for: "prd_greedy") == 2)
        let other = book.issue(secret: "prd_other", now: start, using: &generator)
        #expect(other.flatMap { book.redeem($0, now: start) } == "prd_other")
        // Expired tickets leave the per-device count when purged.
        book.purge(now: start + .seconds(31))
        #expect(book.count == 0 && book.outstanding(for: "prd_greedy") == 0)
    }
}
