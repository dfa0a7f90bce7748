import PushRelayWire

// Fuzz target (dispatched by CoreEntry.swift): the JSON parser, the FCM send request built on it and its envelope,
// and the device-group request of `/fcm/notification` (Sources/PushRelayCore), compiled into one module with the
// core's sources by Fuzz/run.sh. Any crash, trap or sanitizer report is a finding; so is a body that the one-pass
// scan of common sends (FCMSendScan) reads differently from the full parser.
func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? JSONValue.parse(bytes)
    if let request = try? FCMSendRequest.parse(json: bytes) {
        _ = Envelope(request: request, senderID: SenderID(19_283_323_559))
    }
    compareScanWithParser(bytes)
    _ = try? FCMDeviceGroupOperation.parse(json: bytes)
    return 0
}

/// Traps unless the scan leaves `bytes` to the parser, or gives the parser's request (or error) and envelope.
private func compareScanWithParser(_ bytes: [UInt8]) {
    let sender = SenderID(19_283_323_559)
    var parsed: FCMSendRequest?
    var parseError: FCMError?
    do {
        parsed = try FCMSendRequest.parseFully(json: bytes)
    } catch {
        parseError = error
    }
    do {
        guard let scanned = try FCMSendScan.request(json: bytes, limits: .default) else { return }
        guard let parsed, scanned == parsed, scanned.notification == parsed.notification, scanned.data == parsed.data,
            Envelope(request: scanned, senderID: sender) == Envelope(request: parsed, senderID: sender)
        else {
            fatalError("the scan read a body differently from the parser: \(String(decoding: bytes, as: UTF8.self))")
        }
    } catch {
        guard error == parseError else {
            fatalError("the scan threw \(error), the parser \(String(describing: parseError))")
        }
    }
}
