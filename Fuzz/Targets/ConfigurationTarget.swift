// libFuzzer target: the configuration file parser (Sources/PushRelayServer/Configuration/ConfigurationFileParser.swift).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? ConfigurationFileParser.parse(text)
    return 0
}
