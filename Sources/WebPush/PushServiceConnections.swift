import Foundation
import HTTP2Streams
import NIOSSL
import Synchronization

/// How the client reaches each push service's origin: over a frame-level HTTP/2 pool of its own, made
/// on first use, or — for a service that does not agree to HTTP/2, and for `http:` test endpoints —
/// through AsyncHTTPClient. A pool unused for `idleLifetime` is closed: browsers' endpoints name a
/// handful of hosts, but one vendor may spread its subscriptions over many.
final class PushServiceConnections: Sendable {
    enum Route: Sendable {
        case http2(HTTP2ConnectionPool)
        case http1
    }

    private struct Entry {
        var route: Route
        var lastUsed: ContinuousClock.Instant
    }

    private let tls: NIOSSLContext
    private let timeout: Duration
    private let connections: Int
    private let maximumInFlight: Int
    private let idleLifetime: Duration
    private let entries = Mutex([String: Entry]())

    init(tls: NIOSSLContext, timeout: Duration, connections: Int, maximumInFlight: Int, idleLifetime: Duration = .seconds(600)) {
        self.tls = tls
        self.timeout = timeout
        self.connections = connections
        self.maximumInFlight = maximumInFlight
        self.idleLifetime = idleLifetime
    }

    /// The route to `subscription`'s origin, and the pools that have been idle too long (removed here,
    /// for the caller to shut down).
    func route(to subscription: WebPushSubscription) -> (route: Route, idle: [HTTP2ConnectionPool]) {
        guard subscription.endpoint.scheme?.lowercased() == "https", let host = subscription.endpoint.host else { return (.http1, []) }
        let origin = subscription.origin
        let now = ContinuousClock.now
        return entries.withLock { entries in
            var idle: [HTTP2ConnectionPool] = []
            for (key, entry) in entries where key != origin && now - entry.lastUsed > idleLifetime {
                if case .http2(let pool) = entry.route { idle.append(pool) }
                entries[key] = nil
            }
            if var entry = entries[origin] {
                entry.lastUsed = now
                entries[origin] = entry
                return (entry.route, idle)
            }
            // A bracketed IPv6 literal connects by its address.
            let address = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            let pool = HTTP2ConnectionPool(
                host: address,
                port: subscription.endpoint.port ?? 443,
                tls: tls,
                timeout: timeout,
                connections: connections,
                maximumInFlight: maximumInFlight
            )
            entries[origin] = Entry(route: .http2(pool), lastUsed: now)
            return (.http2(pool), idle)
        }
    }

    /// `origin` turned out not to speak HTTP/2: its requests go through AsyncHTTPClient from now on.
    /// Returns its pool, for the caller to shut down.
    func useHTTP1(for origin: String) -> HTTP2ConnectionPool? {
        entries.withLock { entries in
            let old = entries[origin]
            entries[origin] = Entry(route: .http1, lastUsed: .now)
            if case .http2(let pool) = old?.route { return pool }
            return nil
        }
    }

    /// Closes every pool.
    func shutdown() async {
        let pools = entries.withLock { entries -> [HTTP2ConnectionPool] in
            defer { entries = [:] }
            return entries.values.compactMap { if case .http2(let pool) = $0.route { pool } else { nil } }
        }
        for pool in pools { await pool.shutdown() }
    }
}
