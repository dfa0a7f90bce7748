#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Files the configuration tests point at: readable PEM-named files, a directory, a regular file, a missing path.
enum ConfigurationTestFixtures {
    static let directory: String = {
        let path = FileManager.default.temporaryDirectory.path + "/pushrelay-config-tests-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for name in ["cert-a.pem", "cert-b.pem", "cert-c.pem", "key-a.pem", "key-b.pem", "key-c.pem", "plain-file"] {
            _ = FileManager.default.createFile(atPath: path + "/" + name, contents: Array("test\n".utf8).withUnsafeBytes { Data($0) })
        }
        try! FileManager.default.createDirectory(atPath: path + "/data", withIntermediateDirectories: true)
        return path
    }()

    static func path(_ name: String) -> String { directory + "/" + name }

    /// Writes `text` to a new config file and returns its path.
    static func configFile(_ text: String) -> String {
        let path = directory + "/config-\(UUID().uuidString).conf"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }
}
