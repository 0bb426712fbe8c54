import DequeModule

/// The connection pool's bookkeeping, apart from locks, threads and libpq: which connections are idle,
/// how many are open, who waits, and what to do at each event. Every method is a pure state change that
/// returns the action the caller must take (resume a waiter, open or close a connection), so the rules
/// are tested without a database (`PoolStateMachineTests`). `PostgresClient` holds one behind its lock
/// and carries the actions out after unlocking.
///
/// Rules: at most `maximumConnections` are open or being opened; an idle connection is reused before a
/// new one is opened (the most recently returned first, whose server process is warmest); waiters are
/// served first in, first out; after shutdown nothing is granted, and returned connections are closed.
struct PoolStateMachine<Connection, Waiter> {
    let maximumConnections: Int
    private(set) var idle: [Connection] = []
    /// Connections open or being opened, leased or idle.
    private(set) var open = 0
    private var waiters = Deque<(id: Int, waiter: Waiter)>()
    private(set) var isShutdown = false

    init(maximumConnections: Int) {
        self.maximumConnections = maximumConnections
    }

    var waiting: Int { waiters.count }

    typealias Grant = PoolGrant<Connection>

    enum LeaseAction {
        case grant(Grant)
        /// Every connection is leased: wait (see `enqueue`).
        case wait
        case shutDown
    }

    /// A lease that would not wait.
    mutating func lease() -> LeaseAction {
        if isShutdown { return .shutDown }
        if let connection = idle.popLast() { return .grant(.existing(connection)) }
        if open < maximumConnections {
            open += 1
            return .grant(.create)
        }
        return .wait
    }

    /// A lease that waits if it must: `waiter` is queued as `id` when the answer is `.wait`, and gets its
    /// grant from a later `release` or `connectionClosed`.
    mutating func enqueue(id: Int, _ waiter: Waiter) -> LeaseAction {
        let action = lease()
        if case .wait = action { waiters.append((id, waiter)) }
        return action
    }

    /// Takes waiter `id` out of the queue (its task was cancelled); `nil` when it was already served.
    mutating func cancel(id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index).waiter
    }

    enum ReleaseAction {
        /// Give the connection to this waiter.
        case handOff(Waiter)
        /// Kept idle: nothing to do.
        case pooled
        /// Close the connection, then report `connectionClosed()`.
        case close
    }

    /// A leased connection came back; `isUsable` is false when it broke.
    mutating func release(_ connection: Connection, isUsable: Bool) -> ReleaseAction {
        guard isUsable, !isShutdown else { return .close }
        if let (_, waiter) = waiters.popFirst() { return .handOff(waiter) }
        idle.append(connection)
        return .pooled
    }

    enum ClosedAction {
        /// The slot goes to this waiter, who opens a connection in it.
        case handSlot(Waiter)
        case none
        /// The pool is shut down and its last connection closed.
        case drained
    }

    /// A connection closed, or one being opened failed: its slot is free.
    mutating func connectionClosed() -> ClosedAction {
        if !isShutdown, let (_, waiter) = waiters.popFirst() { return .handSlot(waiter) }
        open -= 1
        return isShutdown && open == 0 ? .drained : .none
    }

    /// Refuses every later lease. Returns the waiters to fail and the idle connections to close (their
    /// slots are freed here); `isDrained` when no connection is left open.
    mutating func shutdown() -> (waiters: [Waiter], idle: [Connection], isDrained: Bool) {
        isShutdown = true
        let failed = waiters.map(\.waiter)
        waiters.removeAll()
        let closing = idle
        open -= idle.count
        idle.removeAll()
        return (failed, closing, open == 0)
    }
}

/// What a lease from the pool gets.
enum PoolGrant<Connection> {
    /// An idle connection, to be checked before use.
    case existing(Connection)
    /// A slot: the caller opens a connection, and reports `connectionClosed()` if that fails.
    case create
}

extension PoolGrant: Sendable where Connection: Sendable {}
