import Foundation
import HeraldCore
import Postgres

/// An open live stream as presence records it.
public struct StreamPresence: Sendable, Equatable {
    public var id: Int64
    public var userKey: Int64
    public var deviceID: Int64?

    public init(id: Int64, userKey: Int64, deviceID: Int64?) {
        self.id = id
        self.userKey = userKey
        self.deviceID = deviceID
    }
}

/// Presence across Herald processes: which process ("node") holds which live streams.
///
/// Postgres is the truth every dispatcher reads: a device is online while a stream of a node whose
/// heartbeat has not expired names it. A node renews its expiry on every heartbeat; a killed node's
/// streams stop counting when it passes, and the next heartbeat of any node removes them.
public struct PresenceStore: Sendable {
    public let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Renews the node's expiry to `ttl` from now (creating the node row if it is missing) and removes
    /// expired nodes with their streams. Returns true when the row had to be created: the node was
    /// taken for dead (it stalled past its expiry), and it must record its open streams again.
    public func heartbeat(node: Int64, ttl: Duration) async throws -> Bool {
        try await client.withRetryingTransaction { connection in
            let created = try await connection.query(
                """
                INSERT INTO herald_nodes (id, expires_at) VALUES (\(node), now() + \(TimeSQL.interval(ttl))::interval)
                ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at
                RETURNING xmax = 0
                """
            )[0].decode(Bool.self)
            try await connection.query("DELETE FROM herald_nodes WHERE expires_at < now() AND id <> \(node)")
            return created
        }
    }

    /// Records open streams of the node (one, at connect; all of them, after `heartbeat` returned true).
    /// A device that opens a stream is in the foreground: its outstanding refresh push is answered.
    /// The node row is made if missing (a stream can open before the node's first heartbeat).
    public func record(node: Int64, ttl: Duration, streams: [StreamPresence]) async throws {
        guard !streams.isEmpty else { return }
        try await client.transaction([
            """
            INSERT INTO herald_nodes (id, expires_at) VALUES (\(node), now() + \(TimeSQL.interval(ttl))::interval)
            ON CONFLICT (id) DO NOTHING
            """,
            """
            INSERT INTO stream_connections (node_id, id, user_key, device_id)
            SELECT \(node), s.id, s.user_key, nullif(s.device_key, 0)
            FROM unnest(\(streams.map(\.id))::int8[], \(streams.map(\.userKey))::int8[], \(streams.map { $0.deviceID ?? 0 })::int8[])
                AS s(id, user_key, device_key)
            ON CONFLICT (node_id, id) DO NOTHING
            """,
            """
            UPDATE device_push_state SET outstanding = false
            WHERE device_id = ANY(\(streams.compactMap(\.deviceID))) AND outstanding
            """,
        ])
    }

    /// The position below which every change committed so far lies: the next transaction id as a
    /// snapshot taken now sees it. A stream that is delivering events by then (registered) gets every
    /// later change as an event; what came before it, a sync brings once its answers' horizon has
    /// passed this position.
    public func currentPosition() async throws -> Int64 {
        try await client.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8")[0].decode(Int64.self)
    }

    /// A stream closed normally. Everything it could have shown live counts as seen: wants for changes
    /// committed before now are answered — the device's own (`anyOffline`), or, when this was the
    /// user's last open stream anywhere, every device's (`allOffline`, where the user was online and
    /// no device was pushed). A stream that dies with its process is not answered: its devices get
    /// their pushes once the node expires.
    public func remove(node: Int64, stream: StreamPresence, policy: MultiDevicePolicy) async throws {
        try await client.withRetryingTransaction { connection in
            try await connection.query("DELETE FROM stream_connections WHERE node_id = \(node) AND id = \(stream.id)")
            let horizon = try await connection.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8")[0].decode(Int64.self)
            switch policy {
            case .anyOffline:
                guard let device = stream.deviceID else { return }
                try await Self.answerWants(deviceID: device, userKey: nil, horizon: horizon, on: connection)
            case .allOffline:
                let stillOnline = try await connection.query(
                    """
                    SELECT 1 FROM stream_connections c JOIN herald_nodes n ON n.id = c.node_id
                    WHERE c.user_key = \(stream.userKey) AND n.expires_at > now() LIMIT 1
                    """
                )
                guard stillOnline.isEmpty else { return }
                try await Self.answerWants(deviceID: nil, userKey: stream.userKey, horizon: horizon, on: connection)
            }
        }
    }

    /// The node stops (graceful shutdown): its row and streams go at once.
    public func removeNode(_ node: Int64) async throws {
        try await client.query("DELETE FROM herald_nodes WHERE id = \(node)")
    }

    /// Whether the device (or, without one, the user) has a live stream on any node.
    public func isOnline(userKey: Int64, deviceID: Int64?) async throws -> Bool {
        !(try await client.query(
            """
            SELECT 1 FROM stream_connections c JOIN herald_nodes n ON n.id = c.node_id
            WHERE c.user_key = \(userKey) AND (\(deviceID)::int8 IS NULL OR c.device_id = \(deviceID)) AND n.expires_at > now()
            LIMIT 1
            """
        ).isEmpty)
    }

    /// Clears the wants older than `horizon` of one device or of all the user's devices.
    private static func answerWants(deviceID: Int64?, userKey: Int64?, horizon: Int64, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE device_push_state p SET wanted_xid = NULL, notification_id = NULL
            FROM devices d
            WHERE d.id = p.device_id AND (\(deviceID)::int8 IS NULL OR d.id = \(deviceID)) AND (\(userKey)::int8 IS NULL OR d.user_key = \(userKey))
                AND p.wanted_xid < \(horizon)
            """
        )
    }
}
