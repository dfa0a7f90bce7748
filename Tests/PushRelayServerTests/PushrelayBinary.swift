import Foundation

/// The daemon binary: `PUSHRELAY_BIN`, else `<repo>/.build/debug/pushrelay`.
let pushrelayBinary: String = ProcessInfo.processInfo.environment["PUSHRELAY_BIN"]
    ?? repositoryRoot + "/.build/debug/pushrelay"
