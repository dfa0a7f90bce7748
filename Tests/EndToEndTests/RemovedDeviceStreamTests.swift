import Foundation
import TestSupport
import Testing

/// A removed device's open stream ends: at once when this node unregisters it, by the next heartbeat when another
/// process removed it (the CLI deleting its project), so a stream never outlives its device.
@Suite("Streams of removed devices", .serialized, .tags(.endToEnd), .hangGuard)
struct RemovedDeviceStreamTests {
    @Test("DELETE /v1/register ends the device's open stream; a project deleted by the CLI ends its devices' streams")
    func removedDevicesStreamsEnd() async throws {
        // A heartbeat every 30 s: the unregistered stream must end long before one; the CLI case waits for it.
        let daemon = try Daemon(arguments: ["--heartbeat-interval", "30s"])
        try await daemon.start()
        let keys = try await daemon.createProject()
        let (leaving, staying) = (try await daemon.registerDevice(keys), try await daemon.registerDevice(keys))
        let leavingStream = try await daemon.openConnectedStream(secret: leaving.secret)
        defer { leavingStream.stop() }
        let stayingStream = try await daemon.openConnectedStream(secret: staying.secret)
        defer { stayingStream.stop() }
        let unregister = try await run(
            "curl", ["-sS", "-X", "DELETE", "\(daemon.baseURL)/v1/register", "-H", "Authorization: Bearer \(leaving.secret)"])
        #expect(unregister.stdout == "{}", "\(unregister.stderr)")
        #expect(await leavingStream.waitForExit(timeout: .seconds(10)) == 0, "the unregistered device's stream is open")
        #expect(await stayingStream.waitForExit(timeout: .milliseconds(500)) == nil, "the other stream ended too")
        try await daemon.terminate()

        let other = try Daemon(arguments: ["--heartbeat-interval", "1s"])
        try await other.start()
        let gone = try await other.createProject("gone")
        let device = try await other.registerDevice(gone)
        let stream = try await other.openConnectedStream(secret: device.secret, "connected")
        defer { stream.stop() }
        let delete = try await Daemon.cli(["project", "delete", "gone", "--data-dir", other.dataDir.path] + other.storeArguments)
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(await stream.waitForExit(timeout: .seconds(10)) == 0, "the deleted project's device's stream is open")
        try await other.terminate()
    }
}
