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
        /// How many of the connections may run `pipelinedQuery` batches at once. Fewer means larger
        /// batches under load (fewer round trips and backend wake-ups); more means more of the server's
        /// cores on them.
        public var pipelineConnections: Int
        /// Each connection's `statement_timeout`: a statement running longer is cancelled by the
        /// server (`PostgresError.Code.queryCanceled`), so that a stuck query — a lock never released,
        /// a plan gone wrong — cannot hold a connection forever. `nil` keeps the server's setting. Work
        /// that may legitimately take longer sets its own for its transaction (`SET LOCAL`).
        public var statementTimeout: Duration?
        /// Whether statements are prepared once per connection and run by name (the default), or run
        /// unnamed every time: for a pooler in transaction mode that cannot keep named statements
        /// (PgBouncer before 1.21, or without `max_prepared_statements`).
        public var preparedStatements: Bool
        /// The prefix of the pool's gauge names (`<prefix>_pool_connections`, …), so that two pools in
        /// one process — the primary's and a standby's — report apart.
        public var metricsPrefix: String

        public init(
            conninfo: String,
            maximumConnections: Int = 8,
            applicationName: String = "herald",
            pipelineConnections: Int? = nil,
            statementTimeout: Duration? = nil,
            metricsPrefix: String = "herald_db",
            preparedStatements: Bool = true
        ) {
            precondition(maximumConnections > 0, "a pool needs at least one connection")
            self.conninfo = conninfo
            self.maximumConnections = maximumConnections
            self.applicationName = applicationName
            self.pipelineConnections = min(maximumConnections, max(1, pipelineConnections ?? maximumConnections / 4))
            self.statementTimeout = statementTimeout
            self.metricsPrefix = metricsPrefix
            self.preparedStatements = preparedStatements
        }
    }
}
