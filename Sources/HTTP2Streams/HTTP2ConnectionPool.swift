import NIOCore
import NIOSSL
import Synchronization

/// A few long-lived HTTP/2 connections over TLS to one host, used in turn: what the APNs and FCM
/// clients send over.
///
/// A connection is made on first use and replaced when it is gone (GOAWAY, a drop); after a failed
/// connect the pool waits with exponential backoff before trying again, so a down server is not
/// hammered. A batch of requests is split into one contiguous share per connection, each handed to its
/// connection's event loop at once; requests that never left a connection that failed or retired
/// while they waited for a stream are sent once more on its replacement.
public final class HTTP2ConnectionPool: Sendable {
    public let host: String
    public let port: Int
    /// `:authority`: the host, with the port unless it is 443.
    public let authority: String
    private let tls: NIOSSLContext
    private let timeout: Duration
    private let maximumInFlight: Int
    private let connected: (@Sendable (any Channel) async throws -> Void)?
    private let slots: [ConnectionSlot]
    private let next = Atomic<Int>(0)

    /// A pool of `connections` to `host:port` over `tls` (which must offer ALPN `h2`; a server that
    /// chooses another protocol fails the requests with `HTTP2ConnectionError.notHTTP2`). `timeout`
    /// bounds connecting, and every request from when its batch is handed to a connection (waiting for
    /// a free stream included) to its answer; at most `maximumInFlight` streams are open at once per
    /// connection (fewer if the server says so). `connected` (tests) runs on each new connection
    /// before any request is sent on it.
    public init(
        host: String,
        port: Int,
        tls: NIOSSLContext,
        timeout: Duration,
        connections: Int,
        maximumInFlight: Int,
        connected: (@Sendable (any Channel) async throws -> Void)? = nil
    ) {
        precondition(connections > 0 && maximumInFlight > 0)
        self.host = host
        self.port = port
        self.authority = port == 443 ? host : "\(host):\(port)"
        self.tls = tls
        self.timeout = timeout
        self.maximumInFlight = maximumInFlight
        self.connected = connected
        self.slots = (0..<connections).map { _ in ConnectionSlot() }
    }

    /// Sends the requests and returns each one's answer, or why it has none, in order. Never throws.
    public func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Answer, HTTP2ConnectionError>] {
        var outcomes = [Result<HTTP2Answer, HTTP2ConnectionError>](repeating: .failure(.closed), count: requests.count)
        // Contiguous shares, one per connection; a lone request goes to the connections in turn.
        let first = next.wrappingAdd(1, ordering: .relaxed).oldValue
        let shares = min(slots.count, requests.count)
        let indexed = Array(requests.enumerated())
        await withTaskGroup(of: [(Int, Result<HTTP2Answer, HTTP2ConnectionError>)].self) { group in
            for share in 0..<shares {
                let part = Array(indexed[(indexed.count * share / shares)..<(indexed.count * (share + 1) / shares)])
                let slot = slots[(first + share) % slots.count]
                group.addTask { [self] in await send(part, on: slot) }
            }
            for await part in group {
                for (index, outcome) in part { outcomes[index] = outcome }
            }
        }
        return outcomes
    }

    /// One share on one slot's connection; what never left goes once more, on the connection the slot
    /// makes next.
    private func send(
        _ part: [(offset: Int, element: HTTP2Request)],
        on slot: ConnectionSlot
    ) async -> [(Int, Result<HTTP2Answer, HTTP2ConnectionError>)] {
        var pending = part
        var answered: [(Int, Result<HTTP2Answer, HTTP2ConnectionError>)] = []
        for attempt in 0..<2 {
            do {
                let connection = try await slot.connection { [host, port, tls, timeout, maximumInFlight, connected] in
                    try await HTTP2Connection.connect(
                        host: host,
                        port: port,
                        tls: tls,
                        timeout: timeout,
                        maximumInFlight: maximumInFlight,
                        connected: connected
                    )
                }
                var unsent: [(offset: Int, element: HTTP2Request)] = []
                for (item, result) in zip(pending, await connection.send(pending.map(\.element))) {
                    if case .failure(.notSent) = result, attempt == 0 {
                        unsent.append(item)
                    } else {
                        answered.append((item.offset, result))
                    }
                }
                pending = unsent
            } catch {
                let failure = error as? HTTP2ConnectionError ?? .failed("\(error)")
                answered += pending.map { ($0.offset, .failure(failure)) }
                pending = []
            }
            if pending.isEmpty { break }
        }
        return answered
    }

    /// Closes the connections; a send after it fails without connecting.
    public func shutdown() async {
        for slot in slots { await slot.close() }
    }
}

/// One connection of a pool: made on first use, replaced when it is gone, with backoff after a failed
/// connect so a down server is not hammered.
private final class ConnectionSlot: Sendable {
    private struct State {
        var connection: HTTP2Connection?
        var connecting: Task<HTTP2Connection, any Error>?
        var failures = 0
        var retryAfter: ContinuousClock.Instant?
        /// Why the last connect failed: told to the requests refused while the slot waits.
        var lastFailure = ""
        /// Set by `close()`: no connection is made or kept after it.
        var closed = false
    }

    private enum Lease {
        case ready(HTTP2Connection)
        case connecting(Task<HTTP2Connection, any Error>)
    }

    private let state = Mutex(State())

    func connection(_ connect: @escaping @Sendable () async throws -> HTTP2Connection) async throws -> HTTP2Connection {
        let lease = try state.withLock { state -> Lease in
            if state.closed { throw PoolClosed() }
            if let connection = state.connection, connection.isUsable { return .ready(connection) }
            if let connecting = state.connecting { return .connecting(connecting) }
            if let retryAfter = state.retryAfter, ContinuousClock.now < retryAfter {
                throw ReconnectBackoff(cause: state.lastFailure)
            }
            let task = Task { try await connect() }
            state.connecting = task
            return .connecting(task)
        }
        let task: Task<HTTP2Connection, any Error>
        switch lease {
        case .ready(let connection): return connection
        case .connecting(let connecting): task = connecting
        }
        do {
            let connection = try await task.value
            let kept = state.withLock { state -> Bool in
                // A connection that comes in after `close()` is closed, never kept.
                guard !state.closed else { return false }
                if state.connection !== connection {
                    state.connection = connection
                    state.connecting = nil
                    state.failures = 0
                    state.retryAfter = nil
                }
                return true
            }
            guard kept else {
                await connection.close()
                throw PoolClosed()
            }
            return connection
        } catch let error as ReconnectBackoff {
            throw error
        } catch {
            state.withLock { state in
                if state.connecting != nil {
                    state.connecting = nil
                    state.failures += 1
                    state.lastFailure = "\(error)"
                    // 100 ms doubling, at most 30 s.
                    state.retryAfter = .now + .milliseconds(min(30_000, 100 << min(state.failures - 1, 9)))
                }
            }
            throw error
        }
    }

    func close() async {
        let connection = state.withLock { state -> HTTP2Connection? in
            defer {
                state.closed = true
                state.connection = nil
                state.connecting?.cancel()
                state.connecting = nil
            }
            return state.connection
        }
        await connection?.close()
    }
}

private struct PoolClosed: Error, CustomStringConvertible {
    var description: String { "the connections were closed" }
}

private struct ReconnectBackoff: Error, CustomStringConvertible {
    var cause: String
    var description: String { "waiting before reconnecting after a failed connection (\(cause))" }
}
