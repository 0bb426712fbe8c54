import DequeModule
import NIOConcurrencyHelpers
import Synchronization

extension PostgresClient {
    /// Runs one short, independent statement — its own implicit transaction — on one of the pool's
    /// pipeline connections, together with whatever other such statements are waiting at that moment.
    ///
    /// Under load the statements queue up while a batch is running and then go to the server in one
    /// round trip (libpq's pipeline mode, each with its own sync point, so one's error does not touch the
    /// others). The server backend then runs them back to back instead of waking for each one, and one
    /// thread hand-off serves the whole batch. At most `configuration.pipelineConnections` connections
    /// run such batches at once; alone, a statement runs as `query(_:)` would.
    ///
    /// Meant for the hot path's index lookups: a slow statement here delays the ones queued behind it.
    /// Cancelling the task withdraws the statement while it waits; once sent, it runs to the end.
    @discardableResult
    public func pipelinedQuery(_ query: PostgresQuery) async throws -> PostgresResult {
        try Task.checkCancellation()
        // Nothing waiting and a pipeline connection free: run it right away, as `query(_:)` would.
        let runsItself = pipeline.withLockedValue { pipeline -> Bool in
            guard pipeline.waiting.isEmpty, pipeline.drainers < configuration.pipelineConnections else { return false }
            pipeline.drainers += 1
            return true
        }
        if runsItself { return try await runAsDrainer(query) }
        let id = nextStatementID.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresResult, any Error>) in
                let startDrainer = pipeline.withLockedValue { pipeline -> Bool in
                    pipeline.waiting.append(PipelineState.Statement(id: id, query: query, continuation: continuation))
                    guard pipeline.drainers < configuration.pipelineConnections else { return false }
                    pipeline.drainers += 1
                    return true
                }
                if startDrainer { acquireDrainerConnection() }
            }
        } onCancel: {
            let withdrawn = pipeline.withLockedValue { pipeline -> PipelineState.Statement? in
                guard let index = pipeline.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return pipeline.waiting.remove(at: index)
            }
            withdrawn?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Runs the caller's statement on a leased connection in the calling task, then hands the
    /// connection on to whatever queued meanwhile.
    private func runAsDrainer(_ query: PostgresQuery) async throws -> PostgresResult {
        let connection: LibPQConnection
        do {
            connection = try await lease()
        } catch {
            handOn(nil)
            throw error
        }
        do {
            let result = try await PostgresConnection(raw: connection, executor: executor).query(query)
            handOn(connection)
            return result
        } catch {
            handOn(connection)
            throw error
        }
    }

    /// After a drainer's own statement: works off the statements that queued meanwhile (on the pool's
    /// threads, so the caller can go on), or gives the slot and the connection back.
    private func handOn(_ connection: LibPQConnection?) {
        let more = pipeline.withLockedValue { pipeline -> Bool in
            if pipeline.waiting.isEmpty {
                pipeline.drainers -= 1
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
            let batch = pipeline.withLockedValue { pipeline -> [PipelineState.Statement] in
                let taken = Array(pipeline.waiting.prefix(PipelineState.batchLimit))
                pipeline.waiting.removeFirst(taken.count)
                if taken.isEmpty { pipeline.drainers -= 1 }
                if taken.count > 1 { pipeline.roundTripsShared += 1 }
                return taken
            }
            if batch.isEmpty { break }
            connection.clearCancelRequest()
            let outcomes: [Result<PostgresResult, PostgresError>]
            if batch.count == 1 {
                // Alone: an ordinary round trip costs less than entering and leaving pipeline mode.
                outcomes = [Result { () throws(PostgresError) -> PostgresResult in try connection.execute(batch[0].query) }]
            } else {
                outcomes = connection.executeBatch(batch.map(\.query))
            }
            for (statement, outcome) in zip(batch, outcomes) {
                statement.continuation.resume(with: outcome.mapError { $0 as any Error })
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
        let abandoned = pipeline.withLockedValue { pipeline -> [PipelineState.Statement] in
            defer { pipeline.waiting.removeAll() }
            pipeline.drainers -= 1
            return Array(pipeline.waiting)
        }
        for statement in abandoned { statement.continuation.resume(throwing: error) }
    }
}

/// Statements waiting for a pipeline connection, and how many drainers are working them off.
struct PipelineState: Sendable {
    /// The most statements sent in one round trip: bounds what one batch keeps the others waiting for.
    static let batchLimit = 16

    struct Statement: Sendable {
        let id: Int
        let query: PostgresQuery
        let continuation: CheckedContinuation<PostgresResult, any Error>
    }

    var waiting = Deque<Statement>()
    /// Connections working the queue off, including statements that run as their caller's own.
    var drainers = 0
    /// Batches of more than one statement sent so far (for tests and diagnostics).
    var roundTripsShared = 0
}

extension PostgresClient {
    /// Statements waiting, connections working them off, and batches sent so far (for tests).
    var pipelineCounts: (waiting: Int, drainers: Int, roundTripsShared: Int) {
        pipeline.withLockedValue { ($0.waiting.count, $0.drainers, $0.roundTripsShared) }
    }
}
