import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LibPQConnection {
    /// The outcome of a statement the server skipped after an earlier one of its group failed (until
    /// `executeBatch` runs it again).
    static let skippedInGroup = PostgresError(code: .other, serverMessage: "skipped after an earlier statement of its group failed")

    /// `executeBatch`, except that a lone statement goes out as an ordinary round trip, which costs
    /// less than entering and leaving pipeline mode.
    func executeIndependently(_ groups: [[PostgresQuery]]) -> [Result<PostgresResult, PostgresError>] {
        guard groups.count == 1, groups[0].count == 1 else { return executeBatch(groups) }
        return [Result { () throws(PostgresError) -> PostgresResult in try execute(groups[0][0]) }]
    }

    /// Runs groups of independent statements — each group one caller's — in one round trip (libpq's
    /// pipeline mode) and returns one outcome per statement, in order: the same outcomes as running
    /// them one after another, each in its own implicit transaction, minus the waiting in between.
    ///
    /// Each group goes out behind one sync point, so the server runs it as one implicit transaction
    /// and answers it in one write. (A sync point per statement would keep a caller's statements
    /// apart too, but libpq 15's `PQpipelineSync` flushes, so that costs a send per statement, and the
    /// server answers each on its own: a wake-up more on each side for a session check with its
    /// lookup.) Groups keep sync points of their own, so that no caller ever sees another's
    /// uncommitted work or has its statements run again for another's failure. Sharing a transaction
    /// within a group must not show either: when a statement fails, the server rolls back the group's
    /// statements before it and skips the ones after, so those run again, one by one, while the
    /// failure stands as that statement's outcome. Statements fail rarely where batches are sent, so
    /// the slow way is kept simple.
    func executeBatch(_ groups: [[PostgresQuery]]) -> [Result<PostgresResult, PostgresError>] {
        var outcomes = executeTogether(groups)
        var start = 0
        for group in groups {
            defer { start += group.count }
            let range = start..<(start + group.count)
            guard isOpen, let failed = outcomes[range].firstIndex(where: { if case .failure = $0 { true } else { false } }) else { continue }
            let query = { (index: Int) in group[index - start] }
            if case .failure(let error) = outcomes[failed], error.sqlState == "0A000" {
                // A stale plan (see `execute`), forgotten so that it is prepared afresh below.
                preparedStatements[StatementKey(query(failed))] = nil
                outcomes[failed] = Result { () throws(PostgresError) -> PostgresResult in try execute(query(failed)) }
            }
            for index in range where index != failed {
                outcomes[index] = Result { () throws(PostgresError) -> PostgresResult in
                    // Once the connection is gone, what is left failed with it, as in `executeTogether`.
                    guard isOpen else { throw PostgresError(code: .connectionLost, serverMessage: "connection lost earlier in the batch") }
                    return try execute(query(index))
                }
            }
        }
        return outcomes
    }

    /// The groups, each behind one sync point. After a failure the rest of its group comes back as
    /// skipped (an error of its own, replaced by `executeBatch`); when a sync point does not come back,
    /// nothing is known to have happened in that group or the ones after it, and their statements
    /// failed with the lost connection.
    private func executeTogether(_ groups: [[PostgresQuery]]) -> [Result<PostgresResult, PostgresError>] {
        let queries = groups.flatMap { $0 }
        let handle: OpaquePointer
        do { handle = try enterPipeline(queries) } catch { return failAll(queries, error) }
        guard groups.allSatisfy({ $0.allSatisfy { send($0, on: handle) } && PQpipelineSync(handle) == 1 }), flush(handle) else {
            // The socket failed mid-batch: nothing of it can be trusted, nor the connection.
            return failAll(queries, lose())
        }
        _ = PQsetnonblocking(handle, 0)
        // The outcomes of the groups whose sync point came back: those stand whatever follows.
        var outcomes: [Result<PostgresResult, PostgresError>] = []
        func lost(_ error: PostgresError) -> [Result<PostgresResult, PostgresError>] {
            outcomes + failAll(Array(queries.dropFirst(outcomes.count)), error)
        }
        for group in groups {
            var answers: [Result<PostgresResult, PostgresError>] = []
            for _ in group {
                let raw = PQgetResult(handle)
                if let raw, PQresultStatus(raw) == PGRES_PIPELINE_ABORTED {
                    PQclear(raw)
                    answers.append(.failure(Self.skippedInGroup))
                } else {
                    let outcome = Result { () throws(PostgresError) -> PostgresResult in try checkResult(raw) }
                    if case .failure(let error) = outcome, error.code == .connectionLost {
                        // The error that ended the session (a terminated backend's FATAL) is a lost
                        // connection to this group and the ones after it, as `execute` reports it.
                        return lost(lose(error))
                    }
                    answers.append(outcome)
                }
                // The end of this statement's results.
                while let extra = PQgetResult(handle) { PQclear(extra) }
            }
            guard readSync(handle) else { return lost(lose()) }
            outcomes += answers
        }
        // A connection that cannot leave pipeline mode would fail every later ordinary call: drop it.
        if PQexitPipelineMode(handle) != 1 { close() }
        return outcomes
    }

    /// Prepares the statements new to this session — outside the pipeline: it happens once per
    /// statement and session, and keeps the pipeline to one result per statement — then enters
    /// pipeline mode with a non-blocking socket, so that a server already answering (and filling our
    /// receive buffer) cannot deadlock against the batch going out.
    private func enterPipeline(_ queries: [PostgresQuery]) throws(PostgresError) -> OpaquePointer {
        let handle = try openHandle()
        for query in queries { _ = try preparedName(for: StatementKey(query), handle: handle) }
        guard PQenterPipelineMode(handle) == 1, PQsetnonblocking(handle, 1) == 0 else { throw lose() }
        return handle
    }

    /// The same error for every statement.
    private func failAll(_ queries: [PostgresQuery], _ error: PostgresError) -> [Result<PostgresResult, PostgresError>] {
        queries.map { _ in .failure(error) }
    }

    /// Reads the sync point and leaves pipeline mode; `false` when either fails.
    private func leavePipeline(_ handle: OpaquePointer) -> Bool {
        readSync(handle) && PQexitPipelineMode(handle) == 1
    }

    /// Reads the result that marks a sync point; `false` when something else came.
    private func readSync(_ handle: OpaquePointer) -> Bool {
        guard let sync = PQgetResult(handle) else { return false }
        defer { PQclear(sync) }
        return PQresultStatus(sync) == PGRES_PIPELINE_SYNC
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
        } catch  where error.sqlState == "0A000" && isOpen {
            // A stale plan (see `execute`), now forgotten: nothing was committed, so running the whole
            // transaction again, freshly prepared, is safe.
            return try executeTransactionOnce(queries, isolation: isolation)
        }
    }

    private func executeTransactionOnce(_ queries: [PostgresQuery], isolation: PostgresIsolationLevel) throws(PostgresError) -> [PostgresResult] {
        try checkNotCanceled()
        let handle = try enterPipeline(queries)
        let statements = [PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.rawValue)")] + queries + ["COMMIT"]
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
        guard leavePipeline(handle) else { throw lose() }
        if let firstError {
            if PQtransactionStatus(handle) != PQTRANS_IDLE { _ = try? execute("ROLLBACK") }
            throw firstError
        }
        // BEGIN's and COMMIT's results are nobody's business.
        return Array(results.dropFirst().dropLast())
    }

    /// Drops a connection whose pipeline went wrong midway: nothing more of it can be trusted.
    private func lose(_ error: PostgresError? = nil) -> PostgresError {
        let lost = error?.reclassified(as: .connectionLost) ?? PostgresError(code: .connectionLost, serverMessage: lastErrorMessage)
        close()
        return lost
    }

    /// Queues one statement: by name when prepared, else with its text.
    private func send(_ query: PostgresQuery, on handle: OpaquePointer) -> Bool {
        let key = StatementKey(query)
        return send(query, key: key, name: preparedStatements[key], on: handle)
    }

    /// Queues one statement by `name`, or with its text when `nil`.
    func send(_ query: PostgresQuery, key: StatementKey, name: String?, on handle: OpaquePointer) -> Bool {
        withParameters(query.bindings) { count, values, lengths, formats in
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
}
