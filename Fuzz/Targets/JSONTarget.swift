import PushRelayWire

// Fuzz target (dispatched by CoreEntry.swift): the JSON parser, the FCM send request built on it and its envelope,
// and the device-group request of `/fcm/notification` (Sources/PushRelayCore), compiled into one module with the
// core's sources by Fuzz/run.sh. Any crash, trap or sanitizer report is a finding.
func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? JSONValue.parse(bytes)
    if let request = try? FCMSendRequest.parse(json: bytes) {
        _ = Envelope(request: request, senderID: SenderID(19_283_323_559))
    }
    _ = try? FCMDeviceGroupOperation.parse(json: bytes)
    return 0
}
