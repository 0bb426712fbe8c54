public import Foundation

extension HeraldClient {
    /// How the client reaches its server and where it keeps its cache.
    public struct Configuration: Sendable {
        /// The server's base URL (`https://herald.example.com`).
        public var serverURL: URL
        /// The user's session token (`POST /v1/users/{id}/sessions`, issued by the app's backend).
        public var sessionToken: String
        /// Asked once for a new session token when the server refuses the current one (expired,
        /// revoked); if it throws, or its token is refused too, calls fail with
        /// `HeraldClientError.unauthorized`.
        public var tokenProvider: (@Sendable () async throws -> String)?
        /// An SQLite file for the cache, so that a cold start shows the last state and resumes from the
        /// saved tokens; `nil` keeps nothing between runs.
        public var cacheURL: URL?
        /// The first wait before reconnecting the live stream, doubled after each failure up to
        /// `maximumReconnectDelay`, each wait drawn at random below it (full jitter).
        public var initialReconnectDelay: Duration = .milliseconds(500)
        /// The longest wait between two reconnection attempts.
        public var maximumReconnectDelay: Duration = .seconds(30)
        /// How often the stream pings the server, so that a dead connection is noticed.
        public var pingInterval: Duration = .seconds(20)
        /// The most time a silent push's refresh may take (iOS gives a background fetch 30 seconds).
        public var backgroundRefreshDeadline: Duration = .seconds(25)

        public init(serverURL: URL, sessionToken: String, tokenProvider: (@Sendable () async throws -> String)? = nil, cacheURL: URL? = nil) {
            self.serverURL = serverURL
            self.sessionToken = sessionToken
            self.tokenProvider = tokenProvider
            self.cacheURL = cacheURL
        }
    }
}
