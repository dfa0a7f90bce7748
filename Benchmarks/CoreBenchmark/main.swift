// Times the per-send CPU cost of PushRelayCore on the seed scenario's body: parse + validate, build the envelope,
// render it with a message id, encode the 200 response. Run with Benchmarks/core-bench.sh (release build).
import PushRelayCore
import PushRelayWire
#if canImport(Glibc)
import Glibc
#endif

let token =
    "eeDh2Sd5HknG1zdC1w1UBD:APA91bFKGr99Cpj7q1Es0oexCeoXf9qinT6GuI-pvCouR8AKueLR1zNc_QZVv_U7t068XGEbPheXZwLF5fvUNZ8c018jv6vMP-1tAQojY6Q4tDV3ySXN"
let body = Array("""
    {
      "to": "\(token)",
      "notification": {
        "body": "Status do pedido",
        "title": "Provedor de Mensagens",
        "orderInfo": {
          "infoReason": "Status de pedido",
          "orderID": 3,
          "userEmail": "matilde@siecola.com.br",
          "newOrderStatus": "Novo pedido"
        }
      },
      "priority": "high",
      "content_available": true
    }
    """.utf8)
let sender = SenderID(19_283_323_559)
let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 200_000 : 200_000

@inline(never)
func blackHole(_ value: Int) { if value == -1 { print("impossible") } }

/// An optional second argument runs only the measurements whose name contains it (for `perf stat`).
let only = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : nil

func measure(_ name: String, _ body: () throws -> Int) rethrows {
    if let only, !name.contains(only) { return }
    for _ in 0..<2_000 { blackHole(try body()) }  // warm-up
    // Thread CPU time, not wall time: the machine is shared, and CPU time is what the relay's cores spend.
    var sink = 0
    let start = cpuNanos()
    for _ in 0..<iterations { sink &+= try body() }
    let nanos = Double(cpuNanos() - start)
    blackHole(sink)
    let perOp = nanos / Double(max(iterations, 1))
    let opsPerSecond = 1e9 / perOp
    print(name + String(repeating: " ", count: max(1, 44 - name.count)), String(format3(perOp / 1000)), "µs/op",
          "  \(Int(opsPerSecond)) ops/s on one core")
}

func cpuNanos() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

func format3(_ value: Double) -> String {
    let scaled = Int((value * 1000).rounded())
    let fraction = String(scaled % 1000)
    return "\(scaled / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

print("body \(body.count) bytes, \(iterations) iterations, thread CPU time per operation")
try measure("JSONValue.parse") { try JSONValue.parse(body).objectValue?.count ?? 0 }
try measure("FCMSendRequest.parse(json:)") { try FCMSendRequest.parse(json: body).payloadSize }
let request = try FCMSendRequest.parse(json: body)
measure("Envelope(request:senderID:)") { Envelope(request: request, senderID: sender).body.count }
let envelope = Envelope(request: request, senderID: sender)
var id: UInt64 = 1_603_214_613_006_763
measure("Envelope.rendered(messageID:)") {
    id += 1
    return envelope.rendered(messageID: MessageID(id)).count
}
measure("FCMSendResponse.jsonBody()") {
    FCMSendResponse(multicastID: MulticastID(3_529_387_488_852_107_593), results: [.messageID(MessageID(id))])
        .jsonBody().count
}
var generator = MessageIDGenerator()
try measure("send: parse+envelope+ids+response+render") {
    let request = try FCMSendRequest.parse(json: body)
    let envelope = Envelope(request: request, senderID: sender)
    let messageID = generator.next(now: WallClock.microsecondsSinceEpoch())
    let response = FCMSendResponse(multicastID: MulticastID.generate(), results: [.messageID(messageID)])
    return response.jsonBody().count + envelope.rendered(messageID: messageID).count
}
