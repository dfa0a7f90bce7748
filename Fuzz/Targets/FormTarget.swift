// Fuzz target (dispatched by CoreEntry.swift): the plain-text (form-encoded) FCM send request (Sources/PushRelayCore).
func fuzzForm(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? FCMSendRequest.parse(form: bytes)
    return 0
}
