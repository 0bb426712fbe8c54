import DequeModule
import Synchronization

extension PostgresClient {
    /// Runs one short, independent statement — its own implicit transaction — on one of the pool's
    /// pipeline connections, together with whatever other such statements are waiting at that moment.
    ///
    /// Under load the statements queue up while a batch is running and then go to the server in one
    /// round trip (libpq's pipeline mode, each caller's statements behind a sync point of their own,
    /// so one's error does not touch the others — see `LibPQConnection.executeBatch`). The server
    /// backend then runs them back to back instead of waking for each one, and one thread hand-off
    /// serves the whole batch. At most `configuration.pipelineConnections` connections run such
    /// batches at once; alone, a statement runs as `query(_:)` would.
    ///
    /// Meant for the hot path's index lookups: a slow statement here delays the ones queued behind it.
    /// Cancelling the task withdraws the statement while it waits; once sent, it runs to the end.
    @discardableResult
    public func pipelinedQuery(_ query: PostgresQuery) async throws -> PostgresResult {
        try await pipelinedQueries([query])[0].get()
    }

    /// Runs independent statements in one round trip and returns one outcome per statement, in order:
    /// the outcomes of running each in its own implicit transaction, one failing touching none of the
    /// others.
    ///
    /// They go behind one sync point, so the server runs them as one implicit transaction and answers
    /// them in one write; when one fails, the others run again one by one. So none of them may be
    /// something a rollback does not undo (a session advisory lock) or that cannot run in a
    /// transaction block (`VACUUM`). Other callers' statements in the same round trip keep sync
    /// points of their own: nothing of theirs is seen before it commits.
    ///
    /// For a request whose statements do not need each other's answers — such as a session check and
    /// the lookup it guards, whose result is thrown away when the check fails. They travel together,
    /// with whatever other pipelined statements are waiting at that moment. Throws only when none of
    /// them could run (the task was cancelled while they waited, or no connection could be had).
    public func pipelinedQueries(_ queries: [PostgresQuery]) async throws -> [Result<PostgresResult, PostgresError>] {
        precondition(!queries.isEmpty, "pipelinedQueries needs at least one statement")
        try Task.checkCancellation()
        // Nothing waiting and a pipeline connection free: run them right away.
        let runsItself = batches.withLock { queue -> Bool in
            guard queue.waiting.isEmpty, queue.drainers < configuration.pipelineConnections else { return false }
            queue.drainers += 1
            return true
        }
        if runsItself { return try await runAsDrainer(queries) }
        let id = nextStatementID.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Result<PostgresResult, PostgresError>], any Error>) in
                let startDrainer = batches.withLock { queue -> Bool in
                    queue.waiting.append(BatchQueue.Statement(id: id, queries: queries, continuation: continuation))
                    guard queue.drainers < configuration.pipelineConnections else { return false }
                    queue.drainers += 1
                    return true
                }
                if startDrainer { acquireDrainerConnection() }
            }
        } onCancel: {
            let withdrawn = batches.withLock { queue -> BatchQueue.Statement? in
                guard let index = queue.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return queue.waiting.remove(at: index)
            }
            withdrawn?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Runs the caller's statements on a leased connection in the calling task, then hands the
    /// connection on to whatever queued meanwhile.
    private func runAsDrainer(_ queries: [PostgresQuery]) async throws -> [Result<PostgresResult, PostgresError>] {
        let connection: LibPQConnection
        do {
            connection = try await lease()
        } catch {
            handOn(nil)
            throw error
        }
        do {
            let outcomes = try await PostgresConnection(raw: connection, executor: executor).run { raw in
                raw.executeIndependently([queries])
            }
            handOn(connection, sent: queries.count)
            return outcomes
        } catch {
            handOn(connection)
            throw error
        }
    }

    /// After a drainer's own statements (`sent` of them in one round trip): works off the statements
    /// that queued meanwhile (on the pool's threads, so the caller can go on), or gives the slot and the
    /// connection back.
    private func handOn(_ connection: LibPQConnection?, sent: Int = 0) {
        let more = batches.withLock { queue -> Bool in
            if sent > 1 { queue.roundTripsShared += 1 }
            if queue.waiting.isEmpty {
                queue.drainers -= 1
                return false
            }
            return true
        }
        guard more else {
            if let connection { release(connection) }
            return
        }
        if let connection, connection.isOpen {
            executor.submit { self.drain(connection) }
        } else {
            if let connection { release(connection) }
            acquireDrainerConnection()
        }
    }

    /// Gets a connection for a drainer, then drains on the pool's threads. Takes the pool's fast path
    /// when a connection is idle (no task is created); waits in line with the other leases otherwise.
    private func acquireDrainerConnection() {
        switch grantWithoutWaiting() {
        case .success(let grant)?:
            executor.submit { self.drain(grant) }
        case .failure(let error)?:
            abandonPipeline(error)
        case nil:
            Task {
                do {
                    let grant = try await self.waitForGrant()
                    self.executor.submit { self.drain(grant) }
                } catch {
                    self.abandonPipeline(error)
                }
            }
        }
    }

    /// Drains with a granted connection. Blocks: runs on the pool's threads only.
    private func drain(_ grant: Grant) {
        switch grant {
        case .existing(let connection):
            do {
                connection.needsValidation = true
                try connection.validateIfNeeded()
            } catch {
                release(connection)
                return acquireDrainerConnection()
            }
            drain(connection)
        case .create:
            do {
                drain(try open())
            } catch {
                abandonPipeline(error)
            }
        }
    }

    /// Runs batches of waiting statements on one connection until none are left. Blocks: runs on the
    /// pool's threads only.
    private func drain(_ connection: LibPQConnection) {
        while true {
            let batch = batches.withLock { queue -> [BatchQueue.Statement] in
                let taken = Array(queue.waiting.prefix(BatchQueue.batchLimit))
                queue.waiting.removeFirst(taken.count)
                if taken.isEmpty { queue.drainers -= 1 }
                if taken.reduce(0, { $0 + $1.queries.count }) > 1 { queue.roundTripsShared += 1 }
                return taken
            }
            if batch.isEmpty { break }
            connection.clearCancelRequest()
            let outcomes = connection.executeIndependently(batch.map(\.queries))
            var next = outcomes[...]
            for statement in batch {
                statement.continuation.resume(returning: Array(next.prefix(statement.queries.count)))
                next = next.dropFirst(statement.queries.count)
            }
            if !connection.isOpen {
                // The connection broke under this batch; later statements get a fresh one.
                release(connection)
                return acquireDrainerConnection()
            }
        }
        release(connection)
    }

    /// No connection can be had: fail every waiting statement and stop this drainer.
    private func abandonPipeline(_ error: any Error) {
        let abandoned = batches.withLock { queue -> [BatchQueue.Statement] in
            defer { queue.waiting.removeAll() }
            queue.drainers -= 1
            return Array(queue.waiting)
        }
        for statement in abandoned { statement.continuation.resume(throwing: error) }
    }
}

/// Statements waiting for a pipeline connection, and how many drainers are working them off.
struct BatchQueue: Sendable {
    /// The most callers served in one round trip: bounds what one batch keeps the others waiting for.
    static let batchLimit = 16

    /// One caller's statements (one, or a few that travel together) and where their outcomes go.
    struct Statement: Sendable {
        let id: Int
        let queries: [PostgresQuery]
        let continuation: CheckedContinuation<[Result<PostgresResult, PostgresError>], any Error>
    }

    var waiting = Deque<Statement>()
    /// Connections working the queue off, including statements that run as their caller's own.
    var drainers = 0
    /// Round trips that carried more than one statement so far (for tests and diagnostics).
    var roundTripsShared = 0
}

extension PostgresClient {
    /// Callers waiting, connections working them off, and round trips shared so far (for tests).
    var batchCounts: (waiting: Int, drainers: Int, roundTripsShared: Int) {
        batches.withLock { ($0.waiting.count, $0.drainers, $0.roundTripsShared) }
    }
}
