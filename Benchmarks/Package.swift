// swift-tools-version:6.2
import PackageDescription

/// Herald's benchmarks (`herald-bench`), in a package of their own so that the product's graph holds
/// no benchmark and no test support: they depend on the main package by path, and on the test support
/// (throwaway clusters, the mock APNs) it offers them. docs/benchmarks.md says how to run each case.
let package = Package(
    name: "herald-benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald-bench", targets: ["HeraldBench"])
    ],
    dependencies: [
        .package(name: "herald", path: "../"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
    ],
    targets: [
        .executableTarget(
            name: "HeraldBench",
            dependencies: [
                .product(name: "APNs", package: "herald"),
                .product(name: "ChildProcess", package: "herald"),
                .product(name: "HeraldClient", package: "herald"),
                .product(name: "HeraldCore", package: "herald"),
                .product(name: "HeraldServer", package: "herald"),
                .product(name: "HeraldServices", package: "herald"),
                .product(name: "HeraldStore", package: "herald"),
                .product(name: "HeraldTesting", package: "herald"),
                .product(name: "Postgres", package: "herald"),
                .product(name: "WebPush", package: "herald"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        )
    ]
)
