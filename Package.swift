// swift-tools-version:6.1
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
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")

let package = Package(
    name: "PushRelay",
    platforms: [.macOS(.v14)],
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
    ],
    targets: [
        // C libraries from Debian, one module each; all pointers stay in the Swift file that wraps them.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // Transport: HTTP/2 (libnghttp2) and HTTP/1.1 (NIOHTTP1) server and client. Knows nothing of push.
        .target(
            name: "PushRelayHTTP",
            dependencies: ["CNghttp2", "PushRelayTLS", nio, nioPosix, nioHTTP1, nioConcurrency, httpTypes, logging],
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
        .target(name: "PushRelayCore", dependencies: [], swiftSettings: swiftSettings),
        // Storage protocol and the SQLite implementation.
        .target(
            name: "PushRelayStore",
            dependencies: ["PushRelayCore", "CSQLite", "COpenSSL", logging, nioConcurrency],
            swiftSettings: swiftSettings
        ),
        // Routes, auth, delivery, services: wires Core, Store and HTTP together.
        .target(
            name: "PushRelayServer",
            dependencies: [
                "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "PushRelayTLS", "PushRelayCrypto",
                nio, nioPosix, nioConcurrency, httpTypes, logging, lifecycle, metrics, prometheus,
            ],
            swiftSettings: swiftSettings
        ),
        // What apps and test hosts link.
        .target(
            name: "PushRelayClient",
            dependencies: [
                "PushRelayHTTP", "PushRelayTLS", nio, nioPosix, nioHTTP1, nioConcurrency, httpTypes, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "pushrelay",
            dependencies: [
                "PushRelayServer", "PushRelayClient", "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "PushRelayTLS",
                "PushRelayCrypto", httpTypes, argumentParser, logging, lifecycle, nio, nioPosix,
            ],
            swiftSettings: swiftSettings
        ),

        // What the test targets share: children run without blocking the cooperative pool, a fake NOTIFY_SOCKET.
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRelayHTTPTests",
            dependencies: ["PushRelayHTTP", "TestSupport", nio, nioPosix, nioEmbedded, nioHTTP1, httpTypes, logging],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayTLSTests",
            dependencies: [
                "PushRelayTLS", "PushRelayHTTP", "TestSupport", nio, nioPosix, nioEmbedded, nioHTTP1, httpTypes, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "PushRelayCoreTests", dependencies: ["PushRelayCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRelayCryptoTests", dependencies: ["PushRelayCrypto", "PushRelayCore"], swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayStoreTests",
            dependencies: ["PushRelayStore", "PushRelayCore", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayServerTests",
            dependencies: [
                "PushRelayServer", "PushRelayCore", "PushRelayStore", "PushRelayHTTP", "TestSupport", nio, httpTypes,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRelayClientTests",
            dependencies: [
                "PushRelayClient", "PushRelayCore", nio, nioPosix, nioEmbedded, nioHTTP1, nioConcurrency, httpTypes,
                logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["PushRelayTLS", "PushRelayClient", "TestSupport", nio, nioPosix, logging],
            swiftSettings: swiftSettings
        ),
    ]
)
