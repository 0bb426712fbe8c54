import DequeModule
import Logging
import Metrics
import NIOConcurrencyHelpers
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
    private let logger: Logger
    private let state: NIOLockedValueBox<State>
    private let gauges: PoolGauges
    /// Statements waiting for a pipeline connection (see `pipelinedQuery`).
    let pipeline = NIOLockedValueBox(PipelineState())
    let nextStatementID = Atomic<Int>(0)

    public init(configuration: Configuration, logger: Logger = Logger(label: "herald.postgres")) {
        self.configuration = configuration
        self.logger = logger
        self.executor = PostgresExecutor(threadCount: configuration.maximumConnections + Self.computeThreads, name: "herald-pg")
        self.state = NIOLockedValueBox(State())
        self.gauges = PoolGauges(maximum: configuration.maximumConnections)
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
        let (waiters, idle) = state.withLockedValue { state -> ([Waiter], [LibPQConnection]) in
            state.isShutdown = true
            let waiters = Array(state.waiters)
            state.waiters.removeAll()
            let idle = state.idle
            state.open -= idle.count
            state.idle.removeAll()
            return (waiters, idle)
        }
        for waiter in waiters {
            waiter.continuation.resume(throwing: PostgresError(code: .clientClosed, serverMessage: "the pool is shut down"))
        }
        for connection in idle {
            _ = try? await executor.run { connection.close() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state -> Bool in
                if state.open == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        publishGauges()
        executor.shutdown()
    }

    // MARK: - Leasing

    enum Grant: Sendable {
        case existing(LibPQConnection)
        case create
    }

    /// What a lease gets without waiting: a connection, a slot to open one in, or an error; `nil`
    /// means every connection is leased.
    func grantWithoutWaiting() -> Result<Grant, any Error>? {
        state.withLockedValue { state -> Result<Grant, any Error>? in
            if state.isShutdown {
                return .failure(PostgresError(code: .clientClosed, serverMessage: "the pool is shut down"))
            }
            if let connection = state.idle.popLast() { return .success(.existing(connection)) }
            if state.open < configuration.maximumConnections {
                state.open += 1
                return .success(.create)
            }
            return nil
        }
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Grant, any Error>
    }

    private struct State {
        var idle: [LibPQConnection] = []
        /// Connections open or being opened, leased or idle.
        var open = 0
        var waiters = Deque<Waiter>()
        var nextWaiterID = 0
        var isShutdown = false
        var drained: [CheckedContinuation<Void, Never>] = []
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
            return try LibPQConnection.connect(conninfo: configuration.conninfo, applicationName: configuration.applicationName)
        } catch {
            logger.warning("could not open a database connection", metadata: ["error": "\(String(reflecting: error))"])
            connectionClosed()
            throw error
        }
    }

    /// Slow path: queue until a connection is released or a slot frees up. The state is checked again
    /// under the lock, since it may have changed since the fast path looked.
    func waitForGrant() async throws -> Grant {
        let id = state.withLockedValue { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                let immediate = state.withLockedValue { state -> Result<Grant, any Error>? in
                    if state.isShutdown {
                        return .failure(PostgresError(code: .clientClosed, serverMessage: "the pool is shut down"))
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let connection = state.idle.popLast() { return .success(.existing(connection)) }
                    if state.open < configuration.maximumConnections {
                        state.open += 1
                        return .success(.create)
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    func release(_ connection: LibPQConnection) {
        enum Outcome {
            case handOff(Waiter)
            case pooled, close
        }
        let outcome: Outcome
        if connection.isOpen {
            outcome = state.withLockedValue { state in
                // Returned after shutdown began: close it instead of pooling it.
                if state.isShutdown { return .close }
                if let waiter = state.waiters.popFirst() { return .handOff(waiter) }
                state.idle.append(connection)
                return .pooled
            }
        } else {
            outcome = .close
        }
        switch outcome {
        case .handOff(let waiter):
            waiter.continuation.resume(returning: .existing(connection))
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
        let (waiter, drained) = state.withLockedValue { state -> (Waiter?, [CheckedContinuation<Void, Never>]) in
            if !state.isShutdown, let waiter = state.waiters.popFirst() {
                return (waiter, [])
            }
            state.open -= 1
            if state.open == 0 {
                defer { state.drained.removeAll() }
                return (nil, state.drained)
            }
            return (nil, [])
        }
        waiter?.continuation.resume(returning: .create)
        drained.forEach { $0.resume() }
    }

    private func publishGauges() {
        let (open, idle, waiting) = state.withLockedValue { ($0.open, $0.idle.count, $0.waiters.count) }
        gauges.publish(open: open, idle: idle, waiting: waiting, pipelineWaiting: pipelineCounts.waiting)
    }
}

/// The pool's Prometheus gauges: `herald_db_pool_connections{state="open|idle|leased"}`,
/// `herald_db_pool_waiters`, `herald_db_pipeline_waiting` and `herald_db_pool_max_connections`.
private struct PoolGauges: Sendable {
    let open = Gauge(label: "herald_db_pool_connections", dimensions: [("state", "open")])
    let idle = Gauge(label: "herald_db_pool_connections", dimensions: [("state", "idle")])
    let leased = Gauge(label: "herald_db_pool_connections", dimensions: [("state", "leased")])
    let waiting = Gauge(label: "herald_db_pool_waiters")
    let pipelineWaiting = Gauge(label: "herald_db_pipeline_waiting")

    init(maximum: Int) {
        Gauge(label: "herald_db_pool_max_connections").record(maximum)
    }

    func publish(open: Int, idle: Int, waiting: Int, pipelineWaiting: Int) {
        self.open.record(open)
        self.idle.record(idle)
        self.leased.record(open - idle)
        self.waiting.record(waiting)
        self.pipelineWaiting.record(pipelineWaiting)
    }
}
