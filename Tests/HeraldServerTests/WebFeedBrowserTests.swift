import Foundation
import HeraldCore
import HeraldTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension BrowserWalks {
    /// The web client's `<herald-feed>` in a real browser: `Tests/Browser/web_feed_walk.py` serves the
    /// demo page from an origin of its own (listed in `HERALD_CORS_ORIGINS`) and from one not listed,
    /// and drives Debian's headless Chromium through a real `herald serve`: the feed loads through CORS,
    /// shows a send live within a second, pages, marks read, is walked by keyboard alone, takes Web
    /// Push through its service worker, shows its cached feed when syncs fail, survives a restart of
    /// the server (which the walk starts, kills and starts again), and the page on the other origin is
    /// refused. Screenshots (light and dark) are left in
    /// `.build/web-feed-screenshots/`.
    ///
    /// Skipped, saying why, where the browser's packages are missing; with `HERALD_REQUIRE_BROWSER=1`,
    /// as CI sets it, it runs and fails instead.
    @Suite("Web feed in a browser")
    struct WebFeedBrowserTests {
        static let adminToken = "web-feed-browser-admin-token-0123456"

        @Test(.enabled(if: ConsoleBrowserTests.canRun, "Chromium, chromium-driver or Selenium is missing: `scripts/bootstrap test` installs them"))
        func theDemoPageOnAnotherOriginWorksInHeadlessChromium() async throws {
            let root = TestPostgres.repositoryRoot()
            let (page, other) = (try Self.freePort(), try Self.freePort())
            try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
                let scratch = NSTemporaryDirectory() + "herald-web-feed-walk-\(getpid())"
                try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: scratch) }
                // The walk starts `herald serve` itself (it kills and restarts it) with this environment.
                let environment = db.heraldEnvironment.merging([
                    "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": Hex.encode(SecureRandom.bytes(32)),
                    "HERALD_WEB_DIR": root + "/web", "HERALD_CORS_ORIGINS": "http://127.0.0.1:\(page)", "HERALD_DEMO": "on",
                    "PATH": "/usr/bin:/bin", "HOME": scratch, "LC_ALL": "C.UTF-8",
                ]) { $1 }
                let status = try await ProgramRun.run(
                    [
                        "/usr/bin/python3", root + "/Tests/Browser/web_feed_walk.py", "--herald-binary", HeraldProcess.executablePath,
                        "--sql-dir", root + "/sql", "--token", Self.adminToken,
                        "--page-port", String(page), "--other-port", String(other), "--demo", root + "/web/demo.html",
                        "--screenshots", root + "/.build/web-feed-screenshots",
                    ],
                    environment: environment.map { "\($0)=\($1)" },
                    outputPath: scratch + "/output"
                )
                let output = (try? String(contentsOfFile: scratch + "/output", encoding: .utf8)) ?? ""
                #expect(status == 0, "the web feed walk failed:\n\(output)")
                #expect(output.contains("the web feed walk passed"))
            }
        }

        /// A loopback port no one listens on now (the kernel's pick for a socket bound to port 0).
        static func freePort() throws -> Int {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
                }
            }
            guard bound else { throw HeraldProcessError(message: "no free loopback port") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }
}
