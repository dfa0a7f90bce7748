// swift-tools-version:6.1
import Foundation
import PackageDescription

/// One set of Swift settings for every target (conventions §2). Warnings-as-errors is passed on the CI command line.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let nio: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioConcurrency: Target.Dependency = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
let nioEmbedded: Target.Dependency = .product(name: "NIOEmbedded", package: "swift-nio")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let lifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let unixSignals: Target.Dependency = .product(name: "UnixSignals", package: "swift-service-lifecycle")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let configuration: Target.Dependency = .product(name: "Configuration", package: "swift-configuration")
let systemPackage: Target.Dependency = .product(name: "SystemPackage", package: "swift-system")
let subprocess: Target.Dependency = .product(name: "Subprocess", package: "swift-subprocess")

let package = Package(
    name: "PushRelay",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .executable(name: "pushrelay", targets: ["pushrelay"]),
        .library(name: "PushRelayClient", targets: ["PushRelayClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // File, environment and flag values for `serve`, `check-config` and the project commands; the reloading file
        // provider re-reads the config file on SIGHUP. JSON (a default trait) is not used: the file keeps its format.
        .package(
            url: "https://github.com/apple/swift-configuration.git", from: "1.4.0",
            traits: ["CommandLineArguments", "Reloading"]
        ),
        // The tests' runner of independent programs (curl, nghttp, openssl, python3) to completion.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        // `FilePath`, the type swift-configuration's file providers take.
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
    ],
    targets: [
        // C libraries from Debian, one module each; all pointers stay in the Swift file that wraps them.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // What server, client and CLI share of the wire: SSE framing, device API names, envelope keys, base64url,
        // percent-decoding. Pure Swift: no NIO, no C, no Foundation.
        .target(name: "PushRelayWire", dependencies: [], swiftSettings: swiftSettings),
        // Transport: HTTP/2 (libnghttp2) and HTTP/1.1 (NIOHTTP1) server and client. Knows nothing of push.
        .target(
            name: "PushRelayHTTP",
            dependencies: [
                "CNghttp2", "PushRelayTLS", "PushRelayWire", nio, nioPosix, nioHTTP1, nioConcurrency, httpTypes, logging,
            ],
            swiftSettings: swiftSettings
        ),
        // TLS on libssl through memory BIOs, as a NIO channel handler.
        .target(
            name: "PushRelayTLS",
            dependencies: ["COpenSSL", nio, nioConcurrency, logging],
            swiftSettings: swiftSettings
        ),
        // RSA keys and RS256 signatures on libcrypto (service accounts, the JWTs of `/token`).
        .target(name: "PushRelayCrypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        // The domain: FCM model, validation, envelope, ids, queue policy, topic conditions. No I/O.
        .target(name: "PushRelayCore", dependencies: ["PushRelayWire"], swiftSettings: swiftSettings),
        // The SQLite VFS that writes each commit's WAL frames with one write (C; sqlite3.h from libsqlite3-dev, linked through CSQLite).
        .target(name: "CSQLiteWAL"),
        // Storage protocol, the SQLite implementation and the PostgreSQL one (postgres-nio).
        .target(
            name: "PushRelayStore",
            dependencies: [
                "PushRelayCore", "CSQLite", "CSQLiteWAL", "COpenSSL", logging, nio, nioConcurrency, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        // Routes, auth, delivery, services: wires Core, Store and HTTP together.
        .target(
            name: "PushRelayServer",
            dependencies: [
                "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "PushRelayTLS", "PushRelayWire", "PushRelayCrypto",
                nio, nioPosix, nioConcurrency, httpTypes, logging, lifecycle, unixSignals, metrics, prometheus,
                configuration, systemPackage,
            ],
            swiftSettings: swiftSettings
        ),
        // What apps and test hosts link: Foundation and URLSession only, no NIO, no C module (Apple platforms too).
        .target(
            name: "PushRelayClient",
            dependencies: ["PushRelayWire", httpTypes, logging],
            swiftSettings: swiftSettings
        ),
        // The client's transport on SwiftNIO and libnghttp2 (HTTP/2, HTTP/1.1 fallback): Linux servers, the CLI.
        .target(
            name: "PushRelayClientNIO",
            dependencies: [
                "PushRelayClient", "PushRelayHTTP", nio, nioPosix, nioHTTP1, nioConcurrency, httpTypes,
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "pushrelay",
            dependencies: [
                "PushRelayServer", "PushRelayClient", "PushRelayClientNIO", "PushRelayWire", "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "PushRelayTLS",
                "PushRelayCrypto", httpTypes, argumentParser, logging, lifecycle, nio,
            ],
            swiftSettings: swiftSettings,
            // Release builds allocate with Debian's jemalloc (libjemalloc2): a send allocates and frees many small
            // objects across threads, and glibc's allocator was 12 % of the daemon's samples at `h2load -c 16 -m 32`
            // (docs/benchmarks.md). Debug builds (tests, AddressSanitizer) keep glibc's.
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux], configuration: .release))]
        ),

        // What the test targets share: children run without blocking the cooperative pool, a fake NOTIFY_SOCKET.
        .target(
            name: "TestSupport",
            dependencies: [subprocess, systemPackage],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayHTTPTests",
            dependencies: [
                "PushRelayHTTP", "PushRelayTLS", "TestSupport", nio, nioPosix, nioEmbedded, nioHTTP1, httpTypes, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayTLSTests",
            dependencies: [
                "PushRelayTLS", "TestSupport", nio, nioPosix, nioEmbedded, nioHTTP1, nioConcurrency, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "PushRelayWireTests", dependencies: ["PushRelayWire"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRelayCoreTests", dependencies: ["PushRelayCore", "PushRelayWire"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRelayCryptoTests", dependencies: ["PushRelayCrypto", "PushRelayCore", "PushRelayWire"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayStoreTests",
            dependencies: [
                "PushRelayStore", "PushRelayCore", "TestSupport", logging, nio, nioPosix, nioConcurrency, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayServerTests",
            dependencies: [
                "PushRelayServer", "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "PushRelayCrypto", "PushRelayWire",
                "TestSupport",
                nio, nioPosix, nioEmbedded, nioConcurrency, httpTypes, logging, lifecycle, configuration,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayClientTests",
            dependencies: [
                "PushRelayClient", "PushRelayClientNIO", "PushRelayHTTP", "PushRelayWire", nio, nioPosix, nioEmbedded,
                nioHTTP1, nioConcurrency, httpTypes,
                logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "PushRelayTLS", "PushRelayClient", "PushRelayClientNIO", "TestSupport", logging,
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// The HTTP/2 server fuzz target (issue 12): built only by `Fuzz/run.sh http2`, which sets PUSHRELAY_FUZZ_HTTP2=1 and
// compiles everything with `-sanitize=fuzzer,address`; libFuzzer supplies `main`, hence `-parse-as-library`.
if ProcessInfo.processInfo.environment["PUSHRELAY_FUZZ_HTTP2"] == "1" {
    package.targets.append(
        .executableTarget(
            name: "FuzzHTTP2",
            dependencies: ["PushRelayHTTP", nio, nioEmbedded, httpTypes, logging],
            path: "Fuzz/HTTP2",
            swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
        ))
}
