import Foundation

/// A connection leased from a `PostgresClient`, valid only inside the closure that received it.
///
/// Each call runs on one of the client's dedicated threads, where libpq blocks: in place when the task
/// already runs on the client's `executor`, else after a hop there. Neither the event loops nor Swift's
/// cooperative pool ever wait on the socket.
///
/// Cancelling the calling task asks the server to cancel the running statement.
public struct PostgresConnection: Sendable {
    let raw: LibPQConnection
    let executor: PostgresExecutor

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresResult {
        try await run { raw in try raw.execute(query) }
    }

    /// Runs trusted SQL text that may contain several statements (the simple query protocol), such as a
    /// migration file. Takes no parameters: never build this text from input.
    public func executeScript(_ sql: String) async throws {
        try await run { raw in try raw.executeScript(sql) }
    }

    /// Runs trusted `COPY … FROM STDIN` SQL with `data` as its input, already in the statement's format
    /// (for example tab-separated text lines). Returns the number of rows copied. Never build the SQL
    /// from input; the data itself may be anything.
    @discardableResult
    public func copyFrom(_ sql: String, data: [UInt8]) async throws -> Int {
        try await run { raw in try raw.copyIn(sql, data: data) }
    }

    /// The server process id of this connection (for `pg_terminate_backend` in tests and diagnostics).
    public var backendPID: Int32 { raw.backendPID }

    func run<R: Sendable>(_ work: @escaping @Sendable (LibPQConnection) throws -> R) async throws -> R {
        let raw = self.raw
        // A cancelled task sends no more statements; and a cancel meant for an earlier call must not
        // stop this one.
        raw.clearCancelRequest()
        try Task.checkCancellation()
        return try await withTaskCancellationHandler {
            try await executor.run {
                try raw.validateIfNeeded()
                return try work(raw)
            }
        } onCancel: {
            // PQcancel opens a connection to the server and waits for it: never on the cancelling
            // task's thread, and not on the pool's threads, which may all be busy with statements.
            Thread { raw.cancel() }.start()
        }
    }
}
