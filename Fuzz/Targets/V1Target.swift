import PushRelayWire

// Fuzz target (dispatched by CoreEntry.swift): the FCM HTTP v1 send body (`messages:send`), its mapping to the
// legacy request and the envelope every device receives (Sources/PushRelayCore). Any crash, trap or sanitizer
// report is a finding.
func fuzzV1(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let message = try? FCMv1Message.parse(json: bytes),
        let request = try? message.legacyRequest(nowSeconds: 1_700_000_000)
    else { return 0 }
    _ = Envelope(request: request, senderID: SenderID(19_283_323_559))
    return 0
}
