import Foundation
import NIOConcurrencyHelpers
@testable import PushRelayStore

/// A temporary directory removed at the end of `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("pushrelay-store-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// A clock tests move by hand.
final class FakeClock: Sendable {
    private let now = NIOLockedValueBox(Date(timeIntervalSince1970: 1_700_000_000))

    var date: Date { self.now.withLockedValue { $0 } }

    func advance(by seconds: Double) {
        self.now.withLockedValue { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// Opens a store in `directory`, runs `body`, closes it.
func withStore<T>(
    in directory: String,
    clock: FakeClock? = nil,
    configure: (inout SQLiteStore.Configuration) -> Void = { _ in },
    _ body: (SQLiteStore) async throws -> T
) async throws -> T {
    var configuration = SQLiteStore.Configuration(directory: directory)
    if let clock {
        configuration.clock = { clock.date }
    }
    configure(&configuration)
    let store = try SQLiteStore(configuration: configuration)
    do {
        let result = try await body(store)
        await store.close()
        return result
    } catch {
        await store.close()
        throw error
    }
}

/// A project with one device.
struct Fixture {
    var credentials: ProjectCredentials
    var registration: DeviceRegistration
    var project: ProjectID { self.credentials.project.id }
    var device: DeviceID { self.registration.device.id }
}

func makeFixture(_ store: SQLiteStore, name: String = "shop") async throws -> Fixture {
    let credentials = try await store.createProject(name: name)
    let registration = try await store.registerDevice(project: credentials.project.id, app: "com.shop", platform: "IOS")
    return Fixture(credentials: credentials, registration: registration)
}

extension Array where Element == UInt8 {
    init(text: String) { self = Array(text.utf8) }
}
