import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// A bounded pool of libpq connections, run as a `Service`.
///
/// At most `maximumConnections` connections are open; further leases wait in FIFO order. Connections
/// open lazily. A connection that broke is dropped when it comes back, and an idle one is checked before
/// reuse (and reconnected if the server went away meanwhile), so the pool heals after a database restart
/// without restarting Herald. All libpq calls run on the pool's own threads (a `PostgresExecutor` with
/// one thread per connection), never on an event loop or the cooperative pool.
///
/// The client is usable as soon as it is created; `run()` publishes the pool gauges and, on graceful
/// shutdown, closes every connection once the leases in flight have finished.
public final class PostgresClient: Service, Sendable {
    public let configuration: Configuration
    /// The threads that make every libpq call. Run request handlers with this executor preference
    /// (`withTaskExecutorPreference(client.executor)`) to avoid a thread hand-off per statement.
    public let executor: PostgresExecutor
    /// Threads of `executor` beyond one per connection. At most one thread per connection can be
    /// blocked in libpq, so these are always free for tasks that only compute — a server's HTTP
    /// connections, whose `/healthz` must answer while the database holds every connection.
    static let computeThreads = 2
    let logger: Logger
    private let state: Mutex<State>
    private let gauges: PoolGauges
    /// Statements waiting for a pipeline connection (see `pipelinedQuery`).
    let batches = Mutex(BatchQueue())
    let nextStatementID = Atomic<Int>(0)

    public init(configuration: Configuration, logger: Logger = Logger(label: "herald.postgres")) {
        self.configuration = configuration
        self.logger = logger
        self.executor = PostgresExecutor(threadCount: configuration.maximumConnections + Self.computeThreads, name: "herald-pg")
        self.state = Mutex(State(machine: PoolStateMachine(maximumConnections: configuration.maximumConnections)))
        self.gauges = PoolGauges(prefix: configuration.metricsPrefix, maximum: configuration.maximumConnections)
    }

    /// Leases a connection for the duration of `body` and returns it to the pool afterwards.
    @discardableResult
    public func withConnection<R: Sendable>(_ body: (PostgresConnection) async throws -> R) async throws -> R {
        let raw = try await lease()
        do {
            let result = try await body(PostgresConnection(raw: raw, executor: executor))
            release(raw)
            return result
        } catch {
            release(raw)
            throw error
        }
    }

    /// Runs one statement on any pooled connection.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresResult {
        try await withConnection { try await $0.query(query) }
    }

    /// Publishes the pool gauges every second until graceful shutdown, then closes the pool.
    ///
    /// Gauges are sampled rather than updated on every lease so the hot path takes one lock, not five.
    public func run() async throws {
        _ = try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.publishGauges()
                try await Task.sleep(for: .seconds(1))
            }
        }
        await shutdown()
    }

    /// Refuses new leases, waits for the ones in flight, closes every connection and stops the threads.
    /// Safe to call more than once.
    public func shutdown() async {
        let (waiters, idle) = state.withLock { state in
            let (waiters, idle, _) = state.machine.shutdown()
            return (waiters, idle)
        }
        for waiter in waiters {
            waiter.resume(throwing: Self.shutDownError)
        }
        for connection in idle {
            _ = try? await executor.run { connection.close() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.machine.open == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        publishGauges()
        executor.shutdown()
    }

    // MARK: - Leasing

    typealias Waiter = CheckedContinuation<Grant, any Error>
    typealias Grant = PoolGrant<LibPQConnection>

    private struct State {
        var machine: PoolStateMachine<LibPQConnection, Waiter>
        var nextWaiterID = 0
        /// `shutdown()` calls waiting for the last connection to close.
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    static let shutDownError = PostgresError(code: .clientClosed, serverMessage: "the pool is shut down")

    /// What a lease gets without waiting: a connection, a slot to open one in, or an error; `nil`
    /// means every connection is leased.
    func grantWithoutWaiting() -> Result<Grant, any Error>? {
        switch state.withLock({ $0.machine.lease() }) {
        case .grant(let grant): return .success(grant)
        case .wait: return nil
        case .shutDown: return .failure(Self.shutDownError)
        }
    }

    func lease() async throws -> LibPQConnection {
        // Fast path: an idle connection or a free slot, decided under one lock without suspending.
        let grant: Grant
        if let immediate = grantWithoutWaiting() {
            grant = try immediate.get()
        } else {
            grant = try await waitForGrant()
        }
        switch grant {
        case .existing(let connection):
            connection.needsValidation = true
            return connection
        case .create:
            return try await executor.run { try self.open() }
        }
    }

    /// Opens a connection for a granted slot; blocks. A failure gives the slot back.
    func open() throws -> LibPQConnection {
        do {
            let connection = try LibPQConnection.connect(conninfo: configuration.conninfo, applicationName: configuration.applicationName)
            connection.prepares = configuration.preparedStatements
            // Session values from now on (a transaction's SET LOCAL returns to them when it ends). JIT
            // compilation is off: the pool runs short statements, and once tables are large a prepared
            // statement's generic plan can be estimated above `jit_above_cost` and compiled again on
            // every execution, many times what the query itself costs
            // (docs/decisions/2026-11-25-copies-looked-up-by-key-and-jit-off.md).
            let milliseconds = configuration.statementTimeout.map {
                String(max(1, $0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000))
            }
            do {
                _ = try connection.execute(
                    """
                    SELECT set_config('jit', 'off', false), CASE WHEN \(milliseconds)::text IS NOT NULL
                        THEN set_config('statement_timeout', \(milliseconds), false) END
                    """
                )
            } catch {
                connection.close()
                throw error
            }
            return connection
        } catch {
            logger.warning("could not open a database connection", metadata: ["error": logger.describe(error)])
            connectionClosed()
            throw error
        }
    }

    /// Slow path: queue until a connection is released or a slot frees up. The state is checked again
    /// under the lock, since it may have changed since the fast path looked.
    func waitForGrant() async throws -> Grant {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let action = state.withLock { state -> PoolStateMachine<LibPQConnection, Waiter>.LeaseAction? in
                    if Task.isCancelled { return nil }
                    return state.machine.enqueue(id: id, continuation)
                }
                switch action {
                case nil: continuation.resume(throwing: CancellationError())
                case .grant(let grant)?: continuation.resume(returning: grant)
                case .shutDown?: continuation.resume(throwing: Self.shutDownError)
                case .wait?: break
                }
            }
        } onCancel: {
            state.withLock { $0.machine.cancel(id: id) }?.resume(throwing: CancellationError())
        }
    }

    func release(_ connection: LibPQConnection) {
        switch state.withLock({ $0.machine.release(connection, isUsable: connection.isOpen) }) {
        case .handOff(let waiter):
            waiter.resume(returning: .existing(connection))
        case .pooled:
            break
        case .close:
            // `PQfinish` may write to the socket, so it runs on the pool's threads (or here, once they
            // have stopped). The slot counts as open until it is done, so `shutdown()` waits for it.
            executor.submit {
                connection.close()
                self.connectionClosed()
            }
        }
    }

    /// A connection slot was freed: give it to a waiter (who will open a new connection) or shrink.
    private func connectionClosed() {
        let (action, drained) = state.withLock { state in
            let action = state.machine.connectionClosed()
            guard case .drained = action else { return (action, [CheckedContinuation<Void, Never>]()) }
            defer { state.drained.removeAll() }
            return (action, state.drained)
        }
        if case .handSlot(let waiter) = action { waiter.resume(returning: .create) }
        drained.forEach { $0.resume() }
    }

    private func publishGauges() {
        let (open, idle, waiting) = state.withLock { ($0.machine.open, $0.machine.idle.count, $0.machine.waiting) }
        gauges.publish(open: open, idle: idle, waiting: waiting, pipelineWaiting: batchCounts.waiting)
    }
}

/// The pool's Prometheus gauges, named after the configuration's prefix (`herald_db` here):
/// `herald_db_pool_connections{state="open|idle|leased"}`, `herald_db_pool_waiters`,
/// `herald_db_pipeline_waiting` and `herald_db_pool_max_connections`.
private struct PoolGauges: Sendable {
    let open: Gauge
    let idle: Gauge
    let leased: Gauge
    let waiting: Gauge
    let pipelineWaiting: Gauge

    init(prefix: String, maximum: Int) {
        open = Gauge(label: "\(prefix)_pool_connections", dimensions: [("state", "open")])
        idle = Gauge(label: "\(prefix)_pool_connections", dimensions: [("state", "idle")])
        leased = Gauge(label: "\(prefix)_pool_connections", dimensions: [("state", "leased")])
        waiting = Gauge(label: "\(prefix)_pool_waiters")
        pipelineWaiting = Gauge(label: "\(prefix)_pipeline_waiting")
        Gauge(label: "\(prefix)_pool_max_connections").record(maximum)
    }

    func publish(open: Int, idle: Int, waiting: Int, pipelineWaiting: Int) {
        self.open.record(open)
        self.idle.record(idle)
        self.leased.record(open - idle)
        self.waiting.record(waiting)
        self.pipelineWaiting.record(pipelineWaiting)
    }
}
