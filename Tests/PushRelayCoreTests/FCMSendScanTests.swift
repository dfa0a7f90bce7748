@testable import PushRelayCore
import PushRelayWire
import Testing

/// The one-pass scan of common JSON sends (`FCMSendScan`) against the full parser: the same request (or error) and
/// byte-equal envelopes, for bodies it reads and for bodies it must leave to the full parser.
@Suite("FCM send scan")
struct FCMSendScanTests {
    static let token = Fixture.token
    static let sender = SenderID(19_283_323_559)

    /// The outcome of one path: the request and its envelope, or the error.
    enum Outcome: Equatable {
        case request(FCMSendRequest, [UInt8])
        case error(FCMError)

        init(_ parse: () throws(FCMError) -> FCMSendRequest) {
            do {
                let request = try parse()
                self = .request(request, Envelope(request: request, senderID: FCMSendScanTests.sender).body)
            } catch {
                self = .error(error)
            }
        }
    }

    /// Checks `body` both ways; returns whether the scan read it itself.
    @discardableResult
    static func compare(_ body: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let bytes = Array(body.utf8)
        let full = Outcome { () throws(FCMError) in try FCMSendRequest.parseFully(json: bytes) }
        let scanned: Bool
        do {
            scanned = try FCMSendScan.request(json: bytes, limits: .default) != nil
        } catch {
            scanned = true
        }
        let parsed = Outcome { () throws(FCMError) in try FCMSendRequest.parse(json: bytes) }
        #expect(parsed == full, "\(body)", sourceLocation: sourceLocation)
        if case .request(let a, let envelopeA) = parsed, case .request(let b, let envelopeB) = full {
            #expect(
                Fixture.text(envelopeA) == Fixture.text(envelopeB), "\(body)", sourceLocation: sourceLocation)
            #expect(a.notification == b.notification && a.data == b.data, sourceLocation: sourceLocation)
            #expect(a.payloadSize == b.payloadSize && a.messageError == b.messageError, sourceLocation: sourceLocation)
        }
        return scanned
    }

    /// Bodies of the common shape: the scan reads each itself.
    static let common: [String] = [
        SeedScenarioTests.body,
        #"{"to":"\#(token)"}"#,
        #"{}"#,
        #" { "to" : "\#(token)" , "priority" : "high" } "#,
        #"{"to":"\#(token)","notification":{}}"#,
        #"{"to":"\#(token)","data":{}}"#,
        #"{"to":"\#(token)","notification":{"title":"Olá","body":"Ação — 日本語 🎉","sound":"default","click_action":"OPEN"}}"#,
        #"{"to":"\#(token)","notification":{"subtitle":"s","title_loc_key":"T","body_loc_key":"B"}}"#,
        #"{"to":"\#(token)","notification":{"badge":3,"title":"t","sound":"s"}}"#,
        #"{"to":"\#(token)","notification":{"badge":"7"}}"#,
        #"{"to":"\#(token)","notification":{"badge":"+7"}}"#,
        #"{"to":"\#(token)","notification":{"badge":"seven","body":"b"}}"#,
        #"{"to":"\#(token)","content_available":true,"notification":{"badge":-1}}"#,
        #"{"to":"\#(token)","mutable_content":true,"content_available":false,"notification":{"title":"t"}}"#,
        #"{"to":"\#(token)","content_available":true}"#,
        #"{"to":"\#(token)","mutable_content":true}"#,
        #"{"to":"\#(token)","data":{"a":"1","n":3,"f":-1.5e3,"t":true,"x":false,"o":{"k":[1,"two",{"z":{}}]},"e":[]}}"#,
        #"{"to":"\#(token)","data":{"a":"b"},"notification":{"title":"t","orderInfo":{"orderID":3}},"collapse_key":"c"}"#,
        #"{"registration_ids":["\#(Fixture.token(1))","\#(Fixture.token(2))","bad"],"data":{"k":"v"}}"#,
        #"{"to":"/topics/news","notification":{"body":"b"}}"#,
        #"{"to":"/topics/bad name!","notification":{"body":"b"}}"#,
        #"{"condition":"'a' in topics && ('b' in topics || 'c' in topics)","data":{"k":"v"}}"#,
        #"{"condition":"'a' in topics &&","data":{"k":"v"}}"#,
        #"{"to":"\#(token)","registration_ids":["\#(token)"]}"#,
        #"{"to":"\#(token)","time_to_live":0,"dry_run":true,"delay_while_idle":false}"#,
        #"{"to":"\#(token)","time_to_live":2419201}"#,
        #"{"to":"\#(token)","time_to_live":1.5}"#,
        #"{"to":"\#(token)","time_to_live":-1}"#,
        #"{"to":"\#(token)","time_to_live":99999999999999999999}"#,
        #"{"to":"\#(token)","restricted_package_name":"","collapse_key":""}"#,
        #"{"to":"\#(token)","restricted_package_name":"com.shop","priority":"10"}"#,
        #"{"to":"","data":{"k":"v"}}"#,
        #"{"to":"not a token","data":{"k":"v"}}"#,
        #"{"to":"\#(token)","unknown":{"deep":[1,2,{"x":"y"}]},"other":null,"n":1}"#,
        #"{"to":"\#(token)","priority":null,"notification":null,"data":null}"#,
        #"{"notification_key":"APA91bGHXQBB-key-of-a-group_1234567890","data":{"k":"v"}}"#,
        #"{"to":"\#(token)","data":{"k":"\#(String(repeating: "v", count: 4095))"}}"#,
        #"{"to":"\#(token)","data":{"k":"\#(String(repeating: "v", count: 4096))"}}"#,
        #"{"to":"/topics/t","data":{"k":"\#(String(repeating: "v", count: 2100))"}}"#,
        "{\n\t\"to\" :\r\n \"\(token)\",\n \"data\" : { \"o\" : { \"a\" : [ 1 , 2 ] } }\n}\n",
    ]

    /// Bodies the scan leaves to the full parser (escapes, repeats, nulls inside values, other `aps` values,
    /// reserved `data` keys, errors).
    static let leftToTheParser: [String] = [
        #"{"to":"\#(token)","notification":{"title":"a\"quote"}}"#,
        #"{"to":"\#(token)","data":{"k":"line\nbreak"}}"#,
        #"{"to":"\u00e9"}"#,
        #"{"to":"\#(token)","to":"\#(token)"}"#,
        #"{"to":"\#(token)","data":{"a":"1","a":"2"}}"#,
        #"{"to":"\#(token)","data":{"o":{"a":1,"a":2}}}"#,
        #"{"to":"\#(token)","data":{"k":null}}"#,
        #"{"to":"\#(token)","data":{"o":[null]}}"#,
        #"{"to":"\#(token)","notification":{"badge":1.5}}"#,
        #"{"to":"\#(token)","notification":{"badge":true}}"#,
        #"{"to":"\#(token)","notification":{"badge":99999999999999999999}}"#,
        #"{"to":"\#(token)","notification":{"title":5}}"#,
        #"{"to":"\#(token)","notification":{"title_loc_args":["a"]}}"#,
        #"{"to":"\#(token)","notification":{"title":null}}"#,
        #"{"to":"\#(token)","data":{"from":"x"}}"#,
        #"{"to":"\#(token)","data":{"google.x":"x"}}"#,
        #"{"to":"\#(token)","data":{"gcm":"x"}}"#,
        #"{"to":"\#(token)","data":{"aps":"x"}}"#,
        #"{"to":"\#(token)","data":{"collapse_key":"x"}}"#,
        #"{"to":"\#(token)","data":{"clé":"x"}}"#,
        #"{"to":"\#(token)","priority":"urgent"}"#,
        #"{"to":5}"#,
        #"{"to":"\#(token)","content_available":"yes"}"#,
        #"{"to":"\#(token)","time_to_live":"60"}"#,
        #"{"to":"\#(token)","data":[1]}"#,
        #"{"registration_ids":[]}"#,
        #"{"registration_ids":"\#(token)"}"#,
        #"{"registration_ids":["\#(token)",5]}"#,
        #"{"to":"\#(token)"} x"#,
        #"{"to":"\#(token)",}"#,
        #"{"to":"\#(token)","data":{"n":01}}"#,
        #"{"to":"\#(token)","data":{"n":1.}}"#,
        #"{"to":"\#(token)","data":{"n":-}}"#,
        #"{"to":"\#(token)","data":{"n":1e}}"#,
        #"{"to":"\#(token)","data":{"t":tru}}"#,
        #"{"to":"\#(token)""#,
        "[1]",
        "",
        "{\"to\":\"\u{01}\"}",
    ]

    @Test func commonBodiesAreScannedAndMatchTheParser() {
        for body in Self.common {
            #expect(Self.compare(body), "the scan left this body to the parser: \(body)")
        }
    }

    @Test func otherBodiesAreLeftToTheParserAndMatchIt() {
        for body in Self.leftToTheParser {
            #expect(!Self.compare(body), "the scan read this body itself: \(body)")
        }
    }

    @Test func registrationIDsOverTheLimitAreLeftToTheParser() {
        let tokens = (0...FCMLimits.maxRegistrationIDs).map { "\"\(Fixture.token($0))\"" }.joined(separator: ",")
        #expect(!Self.compare(#"{"registration_ids":[\#(tokens)],"data":{"k":"v"}}"#))
        let exactly = (1...FCMLimits.maxRegistrationIDs).map { "\"\(Fixture.token($0))\"" }.joined(separator: ",")
        #expect(Self.compare(#"{"registration_ids":[\#(exactly)],"data":{"k":"v"}}"#))
    }

    @Test func depthAndSizeLimitsAreTheParsers() {
        let deep = String(repeating: "[", count: 62) + String(repeating: "]", count: 62)
        #expect(Self.compare(#"{"to":"\#(Self.token)","data":{"d":\#(deep)}}"#))  // 64 levels: accepted
        let tooDeep = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        #expect(!Self.compare(#"{"to":"\#(Self.token)","data":{"d":\#(tooDeep)}}"#))
        let small = JSONParseLimits(maxDepth: 64, maxBytes: 32)
        let bytes = Array(#"{"to":"\#(Self.token)"}"#.utf8)
        #expect((try? FCMSendScan.request(json: bytes, limits: small)) == .some(nil))
        #expect((try? FCMSendScan.request(json: bytes, limits: .v1)) == .some(nil))
    }

    /// Variations of the seed body (member order, blanks, value kinds) from a fixed seed: both paths agree on each.
    @Test func generatedVariationsMatchTheParser() {
        var generator = FakeRandomNumberGenerator(state: 0x5EED)
        let values = [#""s""#, "3", "-0.25", "1E+2", "true", "false", #"{"a":"b","c":[1,{"d":false}]}"#, "[]", "{}",
                      #""Olá 🎉""#, "null", #""esc\"aped""#, "[1,]", #"{"a":1,"a":2}"#]
        let keys = ["title", "body", "sound", "orderInfo", "badge", "k", "subtitle", "click_action", "a b"]
        let blanks = ["", " ", "\n", "\t ", "\r\n"]
        var scanned = 0
        for _ in 0..<400 {
            func blank() -> String { blanks[Int(generator.next() % UInt64(blanks.count))] }
            func member(_ key: String) -> String {
                "\(blank())\"\(key)\"\(blank()):\(blank())\(values[Int(generator.next() % UInt64(values.count))])\(blank())"
            }
            let notification = (0..<Int(generator.next() % 4)).map { _ in
                member(keys[Int(generator.next() % UInt64(keys.count))])
            }
            let data = (0..<Int(generator.next() % 3)).map { _ in
                member(keys[Int(generator.next() % UInt64(keys.count))])
            }
            var top = [#""to":"\#(Self.token)""#, #""notification":{\#(notification.joined(separator: ","))}"#,
                       #""data":{\#(data.joined(separator: ","))}"#, member("content_available"), member("priority")]
            top.shuffle(using: &generator)
            let body = "{" + top.prefix(2 + Int(generator.next() % 4)).joined(separator: ",") + "}"
            if Self.compare(body) { scanned += 1 }
        }
        #expect(scanned > 20, "only \(scanned) of 400 variations took the scan")
    }

    @Test func scannedObjectsReadAsParsed() throws {
        let bytes = Array(SeedScenarioTests.body.utf8)
        let request = try #require(try FCMSendScan.request(json: bytes, limits: .default))
        let full = try FCMSendRequest.parseFully(json: bytes)
        #expect(request.notification == full.notification)
        #expect(request.notification?["orderInfo"]?.objectValue?["orderID"]?.int64Value == 3)
        #expect(request.effectivePriority == full.effectivePriority)
    }

    @Test func changedRequestsWriteTheirEnvelopeFromTheFields() throws {
        let bytes = Array(SeedScenarioTests.body.utf8)
        var request = try #require(try FCMSendScan.request(json: bytes, limits: .default))
        var full = try FCMSendRequest.parseFully(json: bytes)
        func same() -> Bool {
            Envelope(request: request, senderID: Self.sender) == Envelope(request: full, senderID: Self.sender)
        }
        #expect(same())
        request.contentAvailable = false
        full.contentAvailable = false
        #expect(same())
        request.mutableContent = true
        full.mutableContent = true
        #expect(same())
        var notification = try #require(request.notification)
        notification["title"] = .string("changed")
        request.notification = notification
        full.notification = notification
        #expect(same())
        #expect(Fixture.text(Envelope(request: request, senderID: Self.sender).body).contains(#""title":"changed""#))
        let data: JSONValue = ["k": "v"]
        request.data = data.objectValue
        full.data = data.objectValue
        #expect(same())
        let aps: JSONValue = ["thread-id": "t"]
        request.apnsExtras = APNsPayloadExtras(aps: try #require(aps.objectValue))
        full.apnsExtras = request.apnsExtras
        #expect(same())
    }
}
