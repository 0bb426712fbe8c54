/// Transaction isolation levels, as `BEGIN ISOLATION LEVEL …` spells them.
public enum PostgresIsolationLevel: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

extension PostgresConnection {
    /// Runs `body` in a transaction on this connection: commits when it returns, rolls back when it
    /// throws (the error is rethrown unchanged).
    @discardableResult
    public func withTransaction<R: Sendable>(
        isolation: PostgresIsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)"))
        let result: R
        do {
            result = try await body(self)
        } catch {
            await rollback()
            throw error
        }
        do {
            try await query("COMMIT")
        } catch {
            // A failed COMMIT has already ended the transaction on the server; the rollback only
            // matters when the connection itself is still mid-transaction.
            await rollback()
            throw error
        }
        return result
    }

    /// Runs `queries` as one transaction in a single round trip: `BEGIN`, the statements and `COMMIT`
    /// are sent together (libpq's pipeline mode) and the statements' results come back in order.
    ///
    /// Each statement sees what the ones before it wrote, but none can use an earlier one's result in
    /// Swift, since all are sent before any answer comes; write such a dependency in SQL (a
    /// data-modifying `WITH`). When a statement fails, nothing is committed and its error is thrown.
    @discardableResult
    public func transaction(_ queries: [PostgresQuery], isolation: PostgresIsolationLevel = .readCommitted) async throws -> [PostgresResult] {
        try await run { raw in try raw.executeTransaction(queries, isolation: isolation) }
    }

    private func rollback() async {
        // Rolling back must happen even when the task was cancelled, or the connection would go back to
        // the pool inside an aborted transaction.
        await Task {
            _ = try? await query("ROLLBACK")
        }.value
    }
}

extension PostgresClient {
    /// Runs `body` in a transaction on a pooled connection.
    @discardableResult
    public func withTransaction<R: Sendable>(
        isolation: PostgresIsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await withConnection { connection in
            try await connection.withTransaction(isolation: isolation, body)
        }
    }

    /// Runs `body` in a transaction and runs the whole transaction again when the server aborts it with a
    /// serialization failure or a deadlock, up to `maximumAttempts` times, with jittered backoff between
    /// attempts. `body` must therefore be safe to repeat: it may not have effects outside the database.
    @discardableResult
    public func withRetryingTransaction<R: Sendable>(
        isolation: PostgresIsolationLevel = .readCommitted,
        maximumAttempts: Int = 5,
        _ body: (PostgresConnection) async throws -> R
    ) async throws -> R {
        try await retryingTransientErrors(maximumAttempts: maximumAttempts) {
            try await withTransaction(isolation: isolation, body)
        }
    }

    /// Runs `queries` as one transaction in one round trip (see `PostgresConnection.transaction`), and
    /// again, like `withRetryingTransaction`, when the server aborts it with a serialization failure or
    /// a deadlock. Returns the statements' results in order.
    @discardableResult
    public func transaction(
        _ queries: [PostgresQuery],
        isolation: PostgresIsolationLevel = .readCommitted,
        maximumAttempts: Int = 5
    ) async throws -> [PostgresResult] {
        try await retryingTransientErrors(maximumAttempts: maximumAttempts) {
            try await withConnection { try await $0.transaction(queries, isolation: isolation) }
        }
    }

    /// Runs one statement — its own transaction — and again, like `withRetryingTransaction`, when the
    /// server aborts it with a serialization failure or a deadlock.
    @discardableResult
    public func retryingQuery(_ query: PostgresQuery, maximumAttempts: Int = 5) async throws -> PostgresResult {
        try await retryingTransientErrors(maximumAttempts: maximumAttempts) {
            try await self.query(query)
        }
    }

    private func retryingTransientErrors<R>(maximumAttempts: Int, _ body: () async throws -> R) async throws -> R {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as PostgresError where error.isTransient && attempt < maximumAttempts {
                // Exponential backoff with full jitter: 0…(5 ms × 2^attempt).
                let ceiling = 5_000_000 << min(attempt, 8)
                try await Task.sleep(nanoseconds: UInt64(Int.random(in: 0...ceiling)))
                attempt += 1
            }
        }
    }
}
