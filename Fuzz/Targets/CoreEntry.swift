// The entry point of the core fuzz binary: the JSON, form, condition, v1 and oauth targets share one build of
// Sources/PushRelayCore (one compile instead of three); Fuzz/run.sh picks the target with PUSHRELAY_FUZZ_TARGET.
#if canImport(Glibc)
import Glibc
#endif

private let selectedTarget: @Sendable (UnsafePointer<UInt8>, Int) -> CInt = {
    let name = getenv("PUSHRELAY_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    switch name {
    case "json": return fuzzJSON
    case "form": return fuzzForm
    case "condition": return fuzzCondition
    case "v1": return fuzzV1
    case "oauth": return fuzzOAuth
    default: fatalError("PUSHRELAY_FUZZ_TARGET must be json, form, condition, v1 or oauth, not '\(name)'")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    selectedTarget(data, size)
}
