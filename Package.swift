// swift-tools-version:6.2
import PackageDescription

/// Every target is compiled in Swift 6 language mode (strict concurrency) with the same upcoming
/// features Hummingbird and SwiftNIO use, so that imports stay explicit and existentials are spelled `any`.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        // What an app embeds: nothing of the server's (no libpq, libssl, Hummingbird) in its graph.
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
        .executable(name: "herald-feed", targets: ["HeraldFeed"]),
        // For the benchmarks' package beside this one (Benchmarks/, which depends on this package by
        // path), not a stable interface: the server's layers, and the test support they measure with.
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldServices", targets: ["HeraldServices"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "Postgres", targets: ["Postgres"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "FCM", targets: ["FCM"]),
        .library(name: "WebPush", targets: ["WebPush"]),
        .library(name: "ChildProcess", targets: ["ChildProcess"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // The client library: its HTTP layer generated from openapi.yaml (by scripts/generate-client,
        // committed), its cache in SQLite, and on Linux (where FoundationNetworking has no WebSocket) a
        // NIO WebSocket client.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        // `swift package generate-documentation --target HeraldClient` (its DocC catalog).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // Tests only: reading openapi.yaml to generate requests from it.
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // System libraries: PostgreSQL's own client (libpq) and libssl, linked through pkg-config.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // Starting and reaping child processes (initdb, pg_ctl, pgbench, herald in tests).
        .target(
            name: "ChildProcess",
            dependencies: ["CChildProcess"],
            swiftSettings: swiftSettings
        ),
        // The one piece of the C library ChildProcess needs that Swift does not see.
        .target(name: "CChildProcess"),

        // The only code that touches libpq.
        .target(
            name: "Postgres",
            dependencies: [
                "CLibPQ",
                "ChildProcess",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // What the server and the client library share of the wire: JSON values and RFC 3339 times.
        // Foundation only.
        .target(
            name: "HeraldWire",
            swiftSettings: swiftSettings
        ),

        // Our own cryptography, all through libssl: digests, MACs, random bytes, AES-GCM, HKDF, P-256
        // (ES256 signatures and ECDH) and RS256.
        .target(
            name: "HeraldCrypto",
            dependencies: ["COpenSSL"],
            swiftSettings: swiftSettings
        ),

        // Domain types and pure rules; no I/O.
        .target(
            name: "HeraldCore",
            dependencies: [
                "HeraldCrypto",
                "HeraldWire",
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: swiftSettings
        ),

        // HTTP/2 over TLS at the frame level (swift-nio-http2, NIOSSL): a pool of long-lived connections
        // whose requests are two frames each, for the push clients that send many small requests to
        // one host.
        .target(
            name: "HTTP2Streams",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // The APNs provider client: credentials, JWT ES256 and .p12 through libssl, HTTP/2 (swift-nio-http2)
        // over TLS (NIOSSL), the request/response model and the error taxonomy.
        .target(
            name: "APNs",
            dependencies: [
                "COpenSSL",
                "HeraldCrypto",
                "HTTP2Streams",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // Web Push (RFC 8030, 8291, 8292): subscriptions, the aes128gcm message encryption and VAPID
        // through HeraldCrypto, and the client, over HTTP2Streams (AsyncHTTPClient for HTTP/1.1 services).
        .target(
            name: "WebPush",
            dependencies: [
                "HeraldCrypto",
                "HTTP2Streams",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),

        // The FCM HTTP v1 client: the service account, its RS256 assertion and access tokens (the token
        // endpoint through AsyncHTTPClient), messages over HTTP2Streams, and the error taxonomy.
        .target(
            name: "FCM",
            dependencies: [
                "HeraldCrypto",
                "HTTP2Streams",
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // SQL, repositories and the migration runner (migrations themselves live in `sql/`).
        .target(
            name: "HeraldStore",
            dependencies: [
                "Postgres",
                "HeraldCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The admin console at /console: pages rendered from console/templates (swift-mustache),
        // signed in with the admin token.
        .target(
            name: "HeraldConsole",
            dependencies: [
                "HeraldCore",
                "HeraldStore",
                "Postgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "MultipartKit", package: "multipart-kit"),
            ],
            swiftSettings: swiftSettings
        ),

        // The background services: the push and webhook dispatchers, fan-out, expiry, compaction,
        // erasure and housekeeping, and the read standby's probe and fitness. The store and the push
        // clients below them, never HTTP serving (no Hummingbird).
        .target(
            name: "HeraldServices",
            dependencies: [
                "APNs",
                "FCM",
                "WebPush",
                "HeraldCore",
                "HeraldStore",
                "Postgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // HTTP (the Hummingbird application, its routes, the live stream) and the wiring that runs it
        // with the background services: configuration, `serve`, `migrate`, fixtures.
        .target(
            name: "HeraldServer",
            dependencies: [
                "APNs",
                "FCM",
                "WebPush",
                "HeraldConsole",
                "HeraldServices",
                "Postgres",
                "HeraldCore",
                "HeraldStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "herald",
            dependencies: [
                "APNs",
                "HeraldServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        // The app-side library (iOS, macOS; Linux for its tests and terminal clients).
        .target(
            name: "HeraldClient",
            dependencies: [
                "HeraldWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "WSClient", package: "swift-websocket", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log", condition: .when(platforms: [.linux])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(platforms: [.linux])),
            ],
            exclude: ["Generated/openapi-generator-config.yaml"],
            // Imports are internal unless a file says `public import`: the generated HTTP layer and
            // the database stay out of the library's interface.
            swiftSettings: swiftSettings + [.enableUpcomingFeature("InternalImportsByDefault")]
        ),

        // `herald-feed`: a channel's feed, live in the terminal, on the client library alone.
        .executableTarget(
            name: "HeraldFeed",
            dependencies: [
                "HeraldClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        // Test support: throwaway Postgres cluster, process and HTTP helpers.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "APNs",
                "HTTP2Streams",
                "FCM",
                "WebPush",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "COpenSSL",
                "ChildProcess",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "Postgres",
                "HeraldCore",
                "HeraldStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        .testTarget(
            name: "HeraldClientTests",
            dependencies: [
                "APNs",
                "HeraldClient",
                "HeraldCore",
                "HeraldStore",
                "HeraldTesting",
                "Postgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChildProcessTests",
            dependencies: ["ChildProcess"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PostgresTests",
            dependencies: ["Postgres", "HeraldTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCryptoTests",
            dependencies: ["HeraldCrypto"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMTests",
            dependencies: [
                "FCM", "HeraldCrypto", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebPushTests",
            dependencies: [
                "WebPush", "HeraldCrypto", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "COpenSSL", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The console at its own layer: its routes on a plain router, over a real store, with the admin
        // API's side answered by stand-ins (HeraldServerTests holds the console wired to the API).
        .testTarget(
            name: "HeraldConsoleTests",
            dependencies: [
                "HeraldConsole",
                "HeraldCore",
                "HeraldStore",
                "HeraldTesting",
                "Postgres",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: ["HeraldStore", "HeraldTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                "APNs",
                "HeraldConsole",
                "HeraldServer",
                "HeraldServices",
                "HeraldTesting",
                "HeraldCore",
                "HeraldStore",
                "Postgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
