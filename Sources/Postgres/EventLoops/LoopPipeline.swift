import CLibPQ
import CSignalIO
import DequeModule
import Logging
import NIOCore
import NIOPosix

/// One event loop's own connection for pipelined statements, driven by libpq's non-blocking calls on
/// that loop.
///
/// A request served on the loop sends its statements here and suspends; they go out at once, each
/// caller's behind a sync point of its own (libpq's pipeline mode), without waiting for the answers
/// of the callers before it. When the socket becomes readable the loop reads what arrived and resumes
/// the callers whose answers are complete, in order, on the same thread — so a request is parsed,
/// queried and answered without a thread hand-off. The outcomes are those of
/// `LibPQConnection.executeBatch`: each caller's statements as if each ran in its own implicit
/// transaction.
///
/// NIO cannot watch a descriptor that it does not read itself, and libpq must be the one to read this
/// socket; so the socket signals readiness instead, and the loop reads those signals (`LoopSignals`).
///
/// Everything but `run`'s entry happens on `loop`, which is what makes the `@unchecked Sendable` hold.
/// Without a usable connection (not opened yet, lost, or the database down) statements take the
/// pool's way meanwhile, and a fresh connection is leased in the background.
final class LoopPipeline: @unchecked Sendable {
    let loop: any EventLoop
    /// Held strongly: the client holds its pipelines until `shutdown()` stops them, which breaks the
    /// cycle; a pipeline never outlives the work it may still have for the pool.
    private let client: PostgresClient
    private let logger: Logger
    private let signals: LoopSignals

    private var connection: LibPQConnection?
    private var handle: OpaquePointer?
    /// Sent callers, oldest first; the first is the one whose answers are being read.
    private var inFlight = Deque<Caller>()
    /// Where the first caller's answers stand: the command read next, and whether its results are
    /// complete but for the empty result that ends them.
    private var cursor = 0
    private var awaitingEnd = false
    /// libpq holds output that the socket would not take yet.
    private var needsFlush = false
    private var acquiring = false
    /// No lease is tried again before this, after one failed.
    private var retryAt = NIODeadline.distantPast
    private var stopped = false
    /// Callers answered here (for tests and diagnostics).
    private(set) var callersServed = 0

    static let retryDelay = TimeAmount.seconds(1)

    /// One caller's statements and where their outcomes go.
    private struct Caller {
        /// What the server answers for this caller, in order: a `Parse` for a statement new to the
        /// session, then the statement itself; a sync point after the last.
        enum Command {
            case prepare(Int)
            case statement(Int)
        }

        let queries: [PostgresQuery]
        let commands: [Command]
        var outcomes: [Result<PostgresResult, PostgresError>?]
        let continuation: CheckedContinuation<[Result<PostgresResult, PostgresError>], any Error>
    }

    private init(signals: LoopSignals, client: PostgresClient, logger: Logger) {
        self.signals = signals
        self.loop = signals.loop
        self.client = client
        self.logger = logger
    }

    /// Sets up a pipeline on `loop`. Fails where signal-driven I/O is not available (outside Linux).
    static func start(on loop: any EventLoop, client: PostgresClient, logger: Logger) async throws -> LoopPipeline {
        let signals = try await LoopSignals.of(loop)
        let pipeline = LoopPipeline(signals: signals, client: client, logger: logger)
        try await loop.submit { signals.add(pipeline) }.get()
        return pipeline
    }

    /// Runs one caller's statements (see `PostgresClient.pipelinedQueries`). Called on `loop`.
    func run(_ queries: [PostgresQuery]) async throws -> [Result<PostgresResult, PostgresError>] {
        guard loop.inEventLoop, let connection, let handle else {
            if loop.inEventLoop { acquireIfNeeded() }
            return try await client.poolPipelinedQueries(queries)
        }
        return try await withCheckedThrowingContinuation { continuation in
            // The closure runs right here, still on the loop.
            send(queries, on: connection, handle, continuation)
        }
    }

    /// Stops: the connection is closed and given back to the pool, and callers still waiting fail.
    func stop() async {
        do {
            try await loop.submit { self.stopOnLoop() }.get()
        } catch {
            // The loop has stopped: nothing runs on it any more, so the pipeline is this thread's.
            stopOnLoop()
        }
    }

    private func stopOnLoop() {
        stopped = true
        signals.remove(self)
        drop(PostgresClient.shutDownError)
    }

    // MARK: - Sending

    private func send(
        _ queries: [PostgresQuery],
        on connection: LibPQConnection,
        _ handle: OpaquePointer,
        _ continuation: CheckedContinuation<[Result<PostgresResult, PostgresError>], any Error>
    ) {
        var commands: [Caller.Command] = []
        var sent = true
        for (index, query) in queries.enumerated() {
            let key = LibPQConnection.StatementKey(query)
            let named = connection.statementName(for: key)
            if let (name, isNew) = named, isNew {
                sent = sent && PQsendPrepare(handle, name, key.sql, Int32(key.types.count), key.types) == 1
                commands.append(.prepare(index))
            }
            sent = sent && connection.send(query, key: key, name: named?.name, on: handle)
            commands.append(.statement(index))
        }
        sent = sent && PQpipelineSync(handle) == 1
        inFlight.append(
            Caller(queries: queries, commands: commands, outcomes: Array(repeating: nil, count: queries.count), continuation: continuation)
        )
        guard sent else { return drop(nil) }
        flush()
    }

    private func flush() {
        guard let handle else { return }
        switch PQflush(handle) {
        case 0: needsFlush = false
        case 1: needsFlush = true  // the socket signals when it takes more
        default: drop(nil)
        }
    }

    // MARK: - Reading

    /// Answers are outstanding, or output waits for room in the socket.
    var isWaiting: Bool { !inFlight.isEmpty || needsFlush }

    /// Reads what the socket holds and answers every caller whose answers are complete.
    func serviceIO() {
        guard let handle else { return }
        if needsFlush {
            flush()
            guard self.handle != nil else { return }
        }
        guard PQconsumeInput(handle) == 1 else { return drop(nil) }
        while !inFlight.isEmpty, PQisBusy(handle) == 0 {
            read(PQgetResult(handle))
            guard self.handle != nil else { return }
        }
    }

    /// Takes one result (or the empty result that ends a command's) for the first caller.
    private func read(_ raw: OpaquePointer?) {
        guard let connection else { return }
        if awaitingEnd {
            // More results than one for a command (none of ours makes them) are dropped.
            if let raw { return PQclear(raw) }
            awaitingEnd = false
            cursor += 1
            return
        }
        var caller = inFlight[0]
        guard cursor < caller.commands.count else {
            // The sync point: this caller is answered.
            let isSync = raw.map { PQresultStatus($0) == PGRES_PIPELINE_SYNC } ?? false
            if let raw { PQclear(raw) }
            guard isSync else { return drop(nil) }
            inFlight.removeFirst()
            cursor = 0
            callersServed += 1
            answer(caller)
            return
        }
        guard let raw else { return drop(nil) }
        awaitingEnd = true
        let skipped = LibPQConnection.skippedInGroup
        switch caller.commands[cursor] {
        case .prepare(let index):
            switch PQresultStatus(raw) {
            case PGRES_COMMAND_OK:
                PQclear(raw)
                return
            case PGRES_PIPELINE_ABORTED:
                PQclear(raw)
                caller.outcomes[index] = .failure(skipped)
            default:
                // The statement will not run: forget its name so that the next use prepares it again.
                connection.preparedStatements[LibPQConnection.StatementKey(caller.queries[index])] = nil
                do throws(PostgresError) {
                    _ = try connection.checkResult(raw)  // an error status: throws, and clears `raw`
                } catch {
                    if error.code == .connectionLost { return drop(error) }
                    caller.outcomes[index] = .failure(error)
                }
            }
        case .statement(let index):
            if caller.outcomes[index] != nil {
                PQclear(raw)
            } else if PQresultStatus(raw) == PGRES_PIPELINE_ABORTED {
                PQclear(raw)
                caller.outcomes[index] = .failure(skipped)
            } else {
                let outcome = Result { () throws(PostgresError) -> PostgresResult in try connection.checkResult(raw) }
                if case .failure(let error) = outcome, error.code == .connectionLost { return drop(error) }
                caller.outcomes[index] = outcome
            }
        }
        inFlight[0] = caller
    }

    /// Resumes a caller. A group in which a statement failed is settled as `executeBatch` does: the
    /// failure stands and the others run again, one by one (the server rolled back the ones before it
    /// and skipped the ones after); a stale or missing prepared statement runs again too.
    private func answer(_ caller: Caller) {
        let outcomes = caller.outcomes.map { $0 ?? .failure(LibPQConnection.skippedInGroup) }
        guard let failed = outcomes.firstIndex(where: { if case .failure = $0 { true } else { false } }) else {
            return caller.continuation.resume(returning: outcomes)
        }
        var again = Set(outcomes.indices).subtracting([failed])
        if case .failure(let error) = outcomes[failed], error.sqlState == "0A000" || error.sqlState == "26000" {
            if let connection { connection.preparedStatements[LibPQConnection.StatementKey(caller.queries[failed])] = nil }
            again.insert(failed)
        }
        guard !again.isEmpty else { return caller.continuation.resume(returning: outcomes) }
        let (client, queries) = (self.client, caller.queries)
        Task {
            var settled = outcomes
            for index in again.sorted() {
                do {
                    settled[index] = try await client.poolPipelinedQueries([queries[index]])[0]
                } catch {
                    settled[index] = .failure(error as? PostgresError ?? PostgresError(code: .other, serverMessage: "\(error)"))
                }
            }
            caller.continuation.resume(returning: settled)
        }
    }

    // MARK: - The connection

    /// Gives up the connection: every caller sent on it fails with `error` (a lost connection when
    /// `nil`), as in `executeBatch`; the next caller takes the pool's way while another is leased.
    private func drop(_ error: PostgresError?) {
        var error = error ?? PostgresError(code: .connectionLost, serverMessage: connection?.lastErrorMessage ?? "connection lost")
        if error.code != .clientClosed { error.code = .connectionLost }
        let callers = inFlight
        inFlight.removeAll()
        (cursor, awaitingEnd, needsFlush) = (0, false, false)
        if let connection {
            if !stopped { logger.warning("the event loop's database connection was lost", metadata: ["error": logger.describe(error)]) }
            connection.close()
            client.release(connection)
        }
        (connection, handle) = (nil, nil)
        for caller in callers {
            caller.continuation.resume(returning: caller.queries.map { _ in .failure(error) })
        }
    }

    private func acquireIfNeeded() {
        guard connection == nil, !acquiring, !stopped, NIODeadline.now() >= retryAt else { return }
        acquiring = true
        let client = self.client
        Task {
            do {
                let connection = try await client.lease()
                do {
                    try await client.executor.run { try connection.validateIfNeeded() }
                } catch {
                    client.release(connection)
                    throw error
                }
                self.loop.execute { self.install(connection) }
            } catch {
                self.loop.execute {
                    self.acquiring = false
                    self.retryAt = .now() + Self.retryDelay
                }
            }
        }
    }

    /// Puts a fresh connection to work: pipeline mode, a non-blocking socket that signals this loop.
    private func install(_ connection: LibPQConnection) {
        acquiring = false
        guard !stopped else { return client.release(connection) }
        guard let handle = connection.rawHandle, PQenterPipelineMode(handle) == 1, PQsetnonblocking(handle, 1) == 0,
            herald_signal_io_watch(PQsocket(handle), signals.thread) == 0
        else {
            logger.warning("could not put a database connection on the event loop", metadata: ["error": "\(connection.lastErrorMessage)"])
            connection.close()
            client.release(connection)
            retryAt = .now() + Self.retryDelay
            return
        }
        (self.connection, self.handle) = (connection, handle)
    }
}
