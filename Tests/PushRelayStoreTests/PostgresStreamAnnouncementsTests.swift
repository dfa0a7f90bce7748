import PushRelayCore
import Testing
@testable import PushRelayStore

/// The batching of stream announcements between nodes (no database): one flush at a time takes everything pending,
/// and a batch too long for one `NOTIFY` is split into payloads the listener reads back in order.
@Suite("Store: PostgreSQL stream announcements")
struct PostgresStreamAnnouncementsTests {
    @Test("streams opened while a flush runs wait for it and go together in its next round")
    func oneFlushAtATime() {
        let announcements = PostgresStreamAnnouncements()
        #expect(announcements.add(device: DeviceID(rawValue: 1), attachment: 10), "the first starts the flush")
        #expect(!announcements.add(device: DeviceID(rawValue: 2), attachment: 11), "one is running")
        #expect(announcements.next()?.map(\.device) == [1, 2])
        #expect(!announcements.add(device: DeviceID(rawValue: 3), attachment: 12), "still running until next() is nil")
        #expect(announcements.next()?.map(\.attachment) == [12])
        #expect(announcements.next() == nil)
        #expect(announcements.add(device: DeviceID(rawValue: 4), attachment: 13), "the flush ended: a new one starts")
    }

    @Test("a long batch is split under the payload limit; every payload reads back, in order")
    func payloadsRoundTrip() throws {
        let streams = (0..<2_000).map { (device: Int64(1_000_000 + $0), attachment: UInt64(5_000 + $0)) }
        let payloads = PostgresStreamAnnouncements.payloads(node: "n1", streams)
        #expect(payloads.count > 1)
        var read: [(device: DeviceID, attachment: UInt64)] = []
        for payload in payloads {
            #expect(payload.utf8.count <= PostgresStreamAnnouncements.maxPayloadBytes)
            let fields = payload.split(separator: " ")
            #expect(fields.count == 4 && fields[0] == "n1" && fields[1] == "s", "\(payload.prefix(40))")
            read += try #require(PostgresStreamAnnouncements.parse(devices: fields[2], attachments: fields[3]))
        }
        #expect(read.map(\.device.rawValue) == streams.map(\.device))
        #expect(read.map(\.attachment) == streams.map(\.attachment))
        #expect(PostgresStreamAnnouncements.payloads(node: "n1", [(7, 8)]) == ["n1 s 7 8"])
    }

    @Test("fields that are not this format read as nothing", arguments: [("1,2", "3"), ("x", "1"), ("1", "-1"), ("", "")])
    func malformed(devices: String, attachments: String) {
        #expect(PostgresStreamAnnouncements.parse(devices: devices[...], attachments: attachments[...]) == nil)
    }
}
