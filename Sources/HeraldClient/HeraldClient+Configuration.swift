public import Foundation
import OpenAPIRuntime

extension HeraldClient {
    /// How the client reaches its server, where it keeps its caches, and how it paces itself.
    public struct Configuration: Sendable {
        /// The server's base URL (`https://herald.example.com`).
        public var serverURL: URL
        /// Asked once for a new session token when the server refuses the current one (expired,
        /// revoked); if it throws, or its token is refused too, calls fail with
        /// `HeraldClientError.unauthorized`. Your backend issues Herald sessions
        /// (`POST /v1/users/{id}/sessions`).
        public var tokenProvider: (@Sendable () async throws -> String)?
        /// A directory for the caches: one SQLite file per user (`herald-<user>-<hash>.sqlite`), so that a
        /// cold start shows that user's last state and resumes from the saved tokens, and no user ever
        /// sees another's. Created when missing. `nil` keeps nothing between runs. If a cache cannot
        /// be opened the client works without one and logs a warning.
        public var cacheDirectory: URL?
        /// The most requests a refresh of everything (`refreshAll()`, a push, the app coming to the
        /// foreground) has in flight at once; the server limits each session's rate (by default 20
        /// requests a second, 100 at once).
        public var maximumConcurrentRefreshes = 4
        /// The first wait before reconnecting the live stream, doubled after each failure up to
        /// `maximumReconnectDelay`, each wait drawn at random below it (full jitter).
        public var initialReconnectDelay: Duration = .milliseconds(500)
        /// The longest wait between two reconnection attempts.
        public var maximumReconnectDelay: Duration = .seconds(30)
        /// How often the stream pings the server; a pong that has not come by the next ping closes the
        /// connection (a half-open socket), and the stream reconnects.
        public var pingInterval: Duration = .seconds(20)
        /// The most time a silent push's refresh may take (iOS gives a background fetch 30 seconds).
        public var backgroundRefreshDeadline: Duration = .seconds(25)
        /// How many times a refresh the library starts by itself (the stream, a push, the foreground,
        /// the network coming back) waits out a `429`'s `Retry-After` and tries again.
        public var rateLimitRetries = 3
        /// Where the library's log goes (nothing secret is in it); `nil` for nowhere.
        public var logHandler: HeraldLogHandler?
        /// Middlewares after the session's, for tests that watch or hold requests.
        var middlewares: [any ClientMiddleware] = []

        public init(
            serverURL: URL,
            tokenProvider: (@Sendable () async throws -> String)? = nil,
            cacheDirectory: URL? = nil,
            logHandler: HeraldLogHandler? = nil
        ) {
            self.serverURL = serverURL
            self.tokenProvider = tokenProvider
            self.cacheDirectory = cacheDirectory
            self.logHandler = logHandler
        }

        /// The cache file of `userID` in `cacheDirectory`: the id percent-encoded, so that any id is
        /// one file name, and a hash of its exact bytes after it, so that two ids differing only in
        /// case never share a file on a file system that ignores case (macOS's, by default).
        func cacheURL(for userID: String) -> URL? {
            guard let cacheDirectory else { return nil }
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-_.")
            let name = userID.addingPercentEncoding(withAllowedCharacters: allowed) ?? userID
            // FNV-1a, 64 bits: stable across runs and platforms, unlike `Hasher`.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in userID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return cacheDirectory.appendingPathComponent("herald-\(name)-\(String(hash, radix: 16)).sqlite")
        }
    }
}
