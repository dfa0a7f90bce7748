// libFuzzer target: the event-stream parser (Sources/PushRelayWire/ServerSentEventParser.swift), which the client
// libraries use.
// The first byte chooses a chunk size, so line ends split across chunks are exercised too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSSE(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
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
