import PushRelayWire

// Fuzz target (dispatched by CoreEntry.swift): the JSON parser and the FCM send request built on it
// (Sources/PushRelayCore), compiled into one module with the core's sources by Fuzz/run.sh. Any crash, trap or
// sanitizer report is a finding.
func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? JSONValue.parse(bytes)
    _ = try? FCMSendRequest.parse(json: bytes)
    return 0
}
