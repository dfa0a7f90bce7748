import PushRelayWire
import Foundation
import Testing

@testable import PushRelayClient

enum JSONEncoderHelper {
    static func encode(_ value: some Encodable) throws -> Data {
        try JSONEncoder().encode(value)
    }
}

/// A random source that returns the same value every time: `fraction` of the range.
struct FixedRandomNumberGenerator: RandomNumberGenerator {
    var value: UInt64

    /// `0` gives the bottom of every range, `UInt64.max` the top.
    init(_ value: UInt64) { self.value = value }

    mutating func next() -> UInt64 { value }
}

/// A small deterministic generator (SplitMix64) for tests that need varied but reproducible draws.
struct SeededRandomNumberGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A temporary directory removed at the end of the test.
struct TemporaryDirectory: ~Copyable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("pushrelay-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing with ``TestTimeout`` after `seconds` (a bound, so that a broken client cannot hang the
/// suite; no test asserts on timing).
func withTimeout<T: Sendable>(
    _ seconds: Double = 20, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next(), let value = result else { throw TestTimeout(what: what) }
        return value
    }
}

/// Runs `client` until `run()` ends (bounded by ``withTimeout(_:_:_:)``) and returns the ``PushClientError`` it
/// ended with; the test fails when it returns or throws anything else.
func failure(ofRunning client: PushClient, _ what: String = "run() to end") async throws -> PushClientError {
    var failure: (any Error)?
    do {
        try await withTimeout(20, what) { try await client.run() }
    } catch {
        failure = error
    }
    return try #require(failure as? PushClientError, "\(String(describing: failure))")
}

extension AsyncStream where Element: Sendable {
    /// The first `count` elements (bounded by ``withTimeout(_:_:_:)``).
    func first(_ count: Int, _ what: String = "stream elements") async throws -> [Element] {
        let stream = self
        return try await withTimeout(20, what) {
            var elements: [Element] = []
            for await element in stream {
                elements.append(element)
                if elements.count == count { break }
            }
            return elements
        }
    }

    /// Elements up to and including the first that satisfies `predicate`.
    func until(_ what: String, _ predicate: @escaping @Sendable (Element) -> Bool) async throws -> [Element] {
        let stream = self
        return try await withTimeout(20, what) {
            var elements: [Element] = []
            for await element in stream {
                elements.append(element)
                if predicate(element) { return elements }
            }
            throw TestTimeout(what: "\(what) (stream ended)")
        }
    }
}

/// A loopback port that refuses connections for as long as it is held: a socket bound to it that does not listen.
/// A port freed after use (a fake relay's, once it stopped) can be handed to another test's relay running in
/// parallel, whose answers would then reach a client that was meant to find nothing there; a port held bound is
/// given to no one else.
final class RefusingPort: @unchecked Sendable {
    let port: Int
    private var descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RefusingPortError(call: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw RefusingPortError(call: "bind")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port>`.
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Lets the port go (the test that held it is done with it).
    func release() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    deinit { release() }
}

struct RefusingPortError: Error, CustomStringConvertible {
    var call: String
    var description: String { "\(call)() failed for a refusing port: errno \(errno)" }
}
