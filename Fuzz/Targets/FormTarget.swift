// Fuzz target (dispatched by CoreEntry.swift): the plain-text (form-encoded) FCM send request and its envelope
// (Sources/PushRelayCore).
func fuzzForm(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let request = try? FCMSendRequest.parse(form: bytes) {
        _ = Envelope(request: request, senderID: SenderID(19_283_323_559))
    }
    return 0
}
