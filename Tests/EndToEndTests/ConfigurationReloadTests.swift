import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `serve --config FILE` and SIGHUP: the daemon re-reads the file through swift-configuration's reloading file
/// provider and applies what can change without a restart.
@Suite(.tags(.endToEnd), .hangGuard) struct ConfigurationReloadTests {
    @Test("SIGHUP applies a changed log_level from the config file, names the fields that need a restart, refuses a broken file")
    func sighupReloadsTheConfigFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("pushrelay.conf").path
        func write(_ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: file)) }
        try write("log_level = \"info\"\nheartbeat_interval = \"25s\"\n")

        let daemon = try Daemon(arguments: ["--config", file])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let device = try await daemon.registerDevice(keys)

        // At info, a stream opening logs nothing (its line is at debug).
        let before = try await daemon.openConnectedStream(secret: device.secret)
        before.stop()
        #expect(!daemon.log.contains("stream opened"))

        // The file now says debug, and changes a field that only a restart applies.
        try write("log_level = \"debug\"\nheartbeat_interval = \"10s\"\n")
        try daemon.hangUp()
        try await daemon.waitForLog("reloaded: log level debug")
        #expect(daemon.log.contains("applied only after a restart: heartbeat_interval"))
        let after = try await daemon.openConnectedStream(secret: device.secret)
        try await daemon.waitForLog("stream opened")
        after.stop()

        // Every SIGHUP makes one reload: the file's provider is the one consumer of the signal (a second one would get
        // only some of them).
        for round in 2...6 {
            try daemon.hangUp()
            try await waitUntilLog(daemon) { $0.components(separatedBy: "reload done").count - 1 == round }
        }

        // A file that no longer parses is refused with its line; the daemon keeps running as it was.
        try write("log_level = \"info\"\nlisten = [\"127.0.0.1:1\"\n")
        try daemon.hangUp()
        try await daemon.waitForLog("reload failed")
        #expect(daemon.log.contains("pushrelay.conf:2"), "\(daemon.log)")
        #expect(daemon.process?.isRunning == true)
        let opened = daemon.log.components(separatedBy: "stream opened").count - 1
        let again = try await daemon.openConnectedStream(secret: device.secret)
        try await waitUntilLog(daemon) { $0.components(separatedBy: "stream opened").count - 1 > opened }
        again.stop()
        #expect(try await daemon.terminate() == 0)
    }

    private func waitUntilLog(_ daemon: Daemon, _ condition: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if condition(daemon.log) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the daemon's log never met the condition:\n\(daemon.log)")
    }
}
