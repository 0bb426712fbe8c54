import Foundation
import HeraldCore
import HeraldTesting
import Testing

extension BrowserWalks {
    /// The admin console in a real browser: `Tests/Browser/console_walk.py` drives Debian's headless
    /// Chromium (Selenium and chromium-driver, installed by `scripts/bootstrap test`) through a real
    /// `herald serve`. It signs in, walks every page checking the browser console, labels, headings and
    /// keyboard focus, edits channels, is refused with a tampered CSRF token and without the cookie, and
    /// signs out. The screenshots it takes of each page are left in `.build/console-screenshots/`.
    ///
    /// Skipped, saying why, where the browser's packages are missing (a plain `swift test` on a machine
    /// set up only to run Herald); with `HERALD_REQUIRE_BROWSER=1`, as CI sets it, it runs and fails
    /// instead, so the walk is never skipped unnoticed there.
    @Suite("Console in a browser")
    struct ConsoleBrowserTests {
        static let adminToken = "console-browser-admin-token-0123456789"
        static let tools = ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"]
        /// Where Debian's python3-selenium puts the module the walk imports.
        static let selenium = "/usr/lib/python3/dist-packages/selenium"
        static var canRun: Bool {
            ProcessInfo.processInfo.environment["HERALD_REQUIRE_BROWSER"] == "1"
                || (tools.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) } && FileManager.default.fileExists(atPath: selenium))
        }

        @Test(.enabled(if: canRun, "Chromium, chromium-driver or Selenium is missing: `scripts/bootstrap test` installs them"))
        func theConsoleWalkPassesInHeadlessChromium() async throws {
            for tool in Self.tools {
                try #require(
                    FileManager.default.isExecutableFile(atPath: tool),
                    "\(tool) is missing: scripts/bootstrap test installs chromium, chromium-driver and python3-selenium"
                )
            }
            let root = TestPostgres.repositoryRoot()
            try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
                let herald = try HeraldProcess(
                    arguments: ["serve", "--port", "0", "--sql-dir", root + "/sql"],
                    environment: db.heraldEnvironment.merging([
                        "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": Hex.encode(SecureRandom.bytes(32)),
                        "HERALD_CONSOLE_DIR": root + "/console",
                    ]) { $1 }
                )
                defer { herald.signal(SIGKILL) }
                let line = try await herald.waitForLine(containing: "Herald listening on")
                let base = try #require(line.split(separator: " ").last.map(String.init))
                let scratch = NSTemporaryDirectory() + "herald-console-walk-\(getpid())"
                try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: scratch) }
                let status = try await ProgramRun.run(
                    [
                        "/usr/bin/python3", root + "/Tests/Browser/console_walk.py", "--url", base, "--token", Self.adminToken, "--screenshots",
                        root + "/.build/console-screenshots",
                    ],
                    environment: ["PATH=/usr/bin:/bin", "HOME=\(scratch)", "LC_ALL=C.UTF-8"],
                    outputPath: scratch + "/output"
                )
                let output = (try? String(contentsOfFile: scratch + "/output", encoding: .utf8)) ?? ""
                #expect(status == 0, "the console walk failed:\n\(output)")
                #expect(output.contains("the console walk passed"))
            }
        }
    }
}
