// libFuzzer target: the event-stream parser (Sources/PushRelayWire/ServerSentEventParser.swift), which the client
// libraries use; and the server's encoder of an event's data, whose fast scan for line breaks must find what the
// byte-by-byte one finds (a trap here otherwise).
// The first byte chooses a chunk size, so line ends split across chunks are exercised too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSSE(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var fast: [UInt8] = []
    var scanned: [UInt8] = []
    ServerSentEventEncoder.appendEvent(id: 1, data: bytes, to: &fast)
    ServerSentEventEncoder.appendEvent(id: 1, data: bytes.lazy.map { $0 }, to: &scanned)
    precondition(fast == scanned, "the encoder's scans disagree")
    guard let first = bytes.first else { return 0 }
    var parser = ServerSentEventParser(maximumLineLength: 4096)
    let chunk = Int(first % 16) + 1
    var start = 1
    while start < bytes.count {
        let end = min(bytes.count, start + chunk)
        guard (try? parser.feed(bytes[start..<end])) != nil else { return 0 }
        start = end
    }
    return 0
}
