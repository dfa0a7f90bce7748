import PushRelayWire

/// The stream tickets of this node: short-lived, single-use stand-ins for a device secret, so that a browser's
/// `EventSource` (which cannot send `Authorization`) opens `/v1/stream?ticket=…` without the long-lived secret in a
/// URL, a log line or the browser history.
///
/// A value type (the routes keep it behind a lock): ``issue(secret:now:using:)`` hands out a ticket,
/// ``redeem(_:now:)`` takes it back once. A ticket is 256 random bits, lives ``lifetime`` and is forgotten when
/// used, expired or purged. At most ``capacity`` tickets are outstanding (expired ones are purged first), so
/// issuing cannot grow memory without bound, and at most ``perDevice`` per device secret: a device's new ticket
/// replaces its oldest beyond that, so that one device asking in a loop (anyone can register one) cannot fill the
/// book and lock every other browser out. Tickets are node-local: behind a TCP load balancer, open the stream
/// on the connection that asked for the ticket (HTTP/2, or HTTP/1.1 keep-alive), or pin clients to a node.
struct StreamTicketBook: Sendable {
    /// How long a ticket stays valid. The relay uses 30 s.
    let lifetime: Duration
    /// How many tickets may be outstanding at once.
    let capacity: Int
    /// How many tickets one device secret may have outstanding; a new one replaces its oldest.
    let perDevice: Int

    private struct Entry: Sendable {
        var secret: String
        var expires: ContinuousClock.Instant
    }

    private var entries: [String: Entry] = [:]
    /// Each secret's outstanding tickets, oldest first.
    private var bySecret: [String: [String]] = [:]

    init(lifetime: Duration = .seconds(30), capacity: Int = 65_536, perDevice: Int = 4) {
        self.lifetime = lifetime
        self.capacity = capacity
        self.perDevice = max(1, perDevice)
    }

    /// How many tickets are outstanding (expired ones included until purged).
    var count: Int { entries.count }

    /// A new ticket for the device with `secret` (its oldest is forgotten if it has ``perDevice`` outstanding), or
    /// `nil` when ``capacity`` tickets are outstanding and none has expired.
    mutating func issue(
        secret: String, now: ContinuousClock.Instant, using generator: inout some RandomNumberGenerator
    ) -> String? {
        if var mine = bySecret[secret], mine.count >= perDevice {
            entries[mine.removeFirst()] = nil
            bySecret[secret] = mine
        }
        if entries.count >= capacity { purge(now: now) }
        guard entries.count < capacity else { return nil }
        let ticket = "tkt_" + Base64URL.randomString(length: 43, using: &generator)
        entries[ticket] = Entry(secret: secret, expires: now + lifetime)
        bySecret[secret, default: []].append(ticket)
        return ticket
    }

    /// The device secret behind `ticket`, once: the ticket is gone afterwards. `nil` for an unknown, used or
    /// expired ticket.
    mutating func redeem(_ ticket: String, now: ContinuousClock.Instant) -> String? {
        guard let entry = entries.removeValue(forKey: ticket) else { return nil }
        forget(ticket, of: entry.secret)
        return now < entry.expires ? entry.secret : nil
    }

    /// How many tickets the device with `secret` has outstanding (expired ones included until purged).
    func outstanding(for secret: String) -> Int { bySecret[secret]?.count ?? 0 }

    /// Forgets every expired ticket.
    mutating func purge(now: ContinuousClock.Instant) {
        entries = entries.filter { now < $0.value.expires }
        bySecret = bySecret.compactMapValues { tickets in
            let live = tickets.filter { entries[$0] != nil }
            return live.isEmpty ? nil : live
        }
    }

    private mutating func forget(_ ticket: String, of secret: String) {
        guard var tickets = bySecret[secret], let index = tickets.firstIndex(of: ticket) else { return }
        tickets.remove(at: index)
        bySecret[secret] = tickets.isEmpty ? nil : tickets
    }
}
