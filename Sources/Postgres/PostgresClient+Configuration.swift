extension PostgresClient {
    /// How to reach the database and how many connections to keep.
    public struct Configuration: Sendable {
        /// A libpq connection string: a `postgres://` URI or `key=value` pairs. Empty means libpq's own
        /// defaults, which read the standard `PG*` environment variables and `.pgpass`.
        public var conninfo: String
        /// The most connections open at once; also the number of threads that run libpq calls.
        public var maximumConnections: Int
        /// Reported to the server as `application_name` unless the connection string sets one.
        public var applicationName: String

        public init(conninfo: String, maximumConnections: Int = 8, applicationName: String = "herald") {
            precondition(maximumConnections > 0, "a pool needs at least one connection")
            self.conninfo = conninfo
            self.maximumConnections = maximumConnections
            self.applicationName = applicationName
        }
    }
}
