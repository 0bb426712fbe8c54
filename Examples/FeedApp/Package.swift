// swift-tools-version:6.2
// An app's package that adds Herald's client library and nothing else of Herald: building it here
// shows the library's graph holds none of the server's dependencies (`scripts/check-client-package`).
import PackageDescription

let package = Package(
    name: "FeedApp",
    platforms: [.macOS(.v15), .iOS(.v17)],
    dependencies: [
        // In an app: .package(url: "https://github.com/<you>/herald.git", from: "<version>")
        .package(name: "herald", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "FeedApp",
            dependencies: [.product(name: "HeraldClient", package: "herald")]
        )
    ]
)
