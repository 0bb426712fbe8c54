import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LibPQConnection {
    /// `executeBatch`, except that a lone statement goes out as an ordinary round trip, which costs
    /// less than entering and leaving pipeline mode.
    func executeIndependently(_ queries: [PostgresQuery]) -> [Result<PostgresResult, PostgresError>] {
        guard queries.count == 1 else { return executeBatch(queries) }
        return [Result { () throws(PostgresError) -> PostgresResult in try execute(queries[0]) }]
    }

    /// Runs several independent statements in one round trip (libpq's pipeline mode) and returns one
    /// outcome per statement, in order.
    ///
    /// Each statement is followed by its own sync point, so each runs in its own implicit transaction
    /// and one statement's error does not abort the others — the same outcome as running them one after
    /// another, minus the waiting in between. The server then works through the batch without going
    /// back to sleep between statements.
    func executeBatch(_ queries: [PostgresQuery]) -> [Result<PostgresResult, PostgresError>] {
        var outcomes = [Result<PostgresResult, PostgresError>?](repeating: nil, count: queries.count)
        let handle: OpaquePointer
        do {
            handle = try openHandle()
            // Statements new to this session are prepared first, outside the pipeline: it happens once
            // per statement and session, and keeps the pipeline to one result per statement.
            for query in queries { _ = try preparedName(for: StatementKey(query), handle: handle) }
        } catch {
            return queries.map { _ in .failure(error) }
        }
        guard PQenterPipelineMode(handle) == 1, PQsetnonblocking(handle, 1) == 0 else {
            let error = PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
            close()
            return queries.map { _ in .failure(error) }
        }
        var sent = 0
        for query in queries {
            guard send(query, on: handle), PQpipelineSync(handle) == 1 else { break }
            sent += 1
        }
        if sent < queries.count || !flush(handle) {
            // The socket failed mid-batch: nothing of it can be trusted, nor the connection.
            let error = PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
            close()
            return queries.map { _ in .failure(error) }
        }
        _ = PQsetnonblocking(handle, 0)
        var lost: PostgresError?
        for index in queries.indices {
            if let lost {
                outcomes[index] = .failure(lost)
                continue
            }
            var (outcome, canGoOn) = readOne(handle)
            if !canGoOn {
                lost = PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
                // The error that ended the session (a terminated backend's FATAL) is a lost connection
                // to the caller, as `execute` reports it.
                outcome = outcome.mapError { error in
                    var error = error
                    error.code = .connectionLost
                    return error
                }
            }
            outcomes[index] = outcome
        }
        // A connection that cannot leave pipeline mode would fail every later ordinary call: drop it.
        if lost != nil || PQexitPipelineMode(handle) != 1 { close() }
        return zip(queries, outcomes).map { query, outcome in
            // A stale plan (see `execute`): run that statement again on its own, freshly prepared.
            if case .failure(let error) = outcome!, error.sqlState == "0A000" {
                preparedStatements[StatementKey(query)] = nil
                return Result { () throws(PostgresError) -> PostgresResult in try execute(query) }
            }
            return outcome!
        }
    }

    /// Runs `queries` as one transaction in one round trip: `BEGIN`, the statements and `COMMIT` go out
    /// together, ending in a single sync point, and the results of the statements come back in order.
    ///
    /// Each statement is still its own statement (in READ COMMITTED it sees what the ones before it
    /// wrote), but none can depend on an earlier one's result in Swift: they are all sent before any
    /// answer arrives. When one fails the server skips the rest, `COMMIT` included, and the transaction
    /// is rolled back; the first error is thrown. An explicit transaction stays open, aborted, past the
    /// sync point, so the rollback costs a second round trip, on that path only.
    func executeTransaction(_ queries: [PostgresQuery], isolation: PostgresIsolationLevel) throws(PostgresError) -> [PostgresResult] {
        do {
            return try executeTransactionOnce(queries, isolation: isolation)
        } catch where error.sqlState == "0A000" && isOpen {
            // A stale plan (see `execute`), now forgotten: nothing was committed, so running the whole
            // transaction again, freshly prepared, is safe.
            return try executeTransactionOnce(queries, isolation: isolation)
        }
    }

    private func executeTransactionOnce(_ queries: [PostgresQuery], isolation: PostgresIsolationLevel) throws(PostgresError) -> [PostgresResult] {
        let handle = try openHandle()
        // As in `executeBatch`: statements new to the session are prepared first, outside the pipeline.
        for query in queries { _ = try preparedName(for: StatementKey(query), handle: handle) }
        try checkNotCanceled()
        let statements = [PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)")] + queries + ["COMMIT"]
        guard PQenterPipelineMode(handle) == 1, PQsetnonblocking(handle, 1) == 0 else { throw lose() }
        for statement in statements {
            guard send(statement, on: handle) else { throw lose() }
        }
        guard PQpipelineSync(handle) == 1, flush(handle) else { throw lose() }
        _ = PQsetnonblocking(handle, 0)
        var results: [PostgresResult] = []
        var firstError: PostgresError?
        for statement in statements {
            do {
                let result = try checkResult(PQgetResult(handle))
                results.append(result)
            } catch {
                if error.code == .connectionLost { throw lose(error) }
                // The statements after a failed one come back "aborted": the failure itself is the
                // error to report. A stale plan is forgotten so that the retry prepares it again.
                if firstError == nil {
                    firstError = error
                    if error.sqlState == "0A000" { preparedStatements[StatementKey(statement)] = nil }
                }
            }
            while let extra = PQgetResult(handle) { PQclear(extra) }
        }
        guard let sync = PQgetResult(handle) else { throw lose() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw lose() }
        if let firstError {
            if PQtransactionStatus(handle) != PQTRANS_IDLE { _ = try? execute("ROLLBACK") }
            throw firstError
        }
        // BEGIN's and COMMIT's results are nobody's business.
        return Array(results.dropFirst().dropLast())
    }

    /// Drops a connection whose pipeline went wrong midway: nothing more of it can be trusted.
    private func lose(_ error: PostgresError? = nil) -> PostgresError {
        var error = error ?? PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        error.code = .connectionLost
        close()
        return error
    }

    /// Queues one statement: by name when prepared, else with its text.
    private func send(_ query: PostgresQuery, on handle: OpaquePointer) -> Bool {
        let key = StatementKey(query)
        let name = preparedStatements[key]
        return withParameters(query.bindings) { count, values, lengths, formats in
            if let name {
                return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1) == 1
            }
            return PQsendQueryParams(handle, query.sql, count, key.types, values, lengths, formats, 1) == 1
        }
    }

    /// Pushes the queued batch to the server. The socket is non-blocking while the batch goes out, so a
    /// server that is already answering (and filling our receive buffer) cannot deadlock against us.
    private func flush(_ handle: OpaquePointer) -> Bool {
        while true {
            switch PQflush(handle) {
            case 0: return true
            case 1:
                var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN | POLLOUT), revents: 0)
                guard poll(&descriptor, 1, -1) >= 0 || errno == EINTR else { return false }
                if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 { return false }
            default: return false
            }
        }
    }

    /// Reads one statement's result, the end of its results and its sync point. `false` in the second
    /// place means the connection cannot go on (the sync point never came).
    private func readOne(_ handle: OpaquePointer) -> (Result<PostgresResult, PostgresError>, Bool) {
        let outcome = Result { () throws(PostgresError) -> PostgresResult in try checkResult(PQgetResult(handle)) }
        if case .failure(let error) = outcome, error.code == .connectionLost { return (outcome, false) }
        while let extra = PQgetResult(handle) { PQclear(extra) }
        guard let sync = PQgetResult(handle) else { return (outcome, false) }
        defer { PQclear(sync) }
        return (outcome, PQresultStatus(sync) == PGRES_PIPELINE_SYNC)
    }
}
