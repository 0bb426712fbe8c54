import Foundation
import HeraldCore
import Postgres

/// A registered device: an iPhone (APNs), an Android phone (FCM) or a browser (Web Push).
public struct Device: Sendable, Equatable {
    /// Herald's id of the device (a live stream may name its device by it).
    public var id: Int64
    public var service: PushService
    /// What the service addresses (`PushAddress.token`): for Web Push, the endpoint URL.
    public var token: String
    public var environment: String
    public var topic: String
    public var createdAt: Date
    public var registeredAt: Date
    public var lastPushAt: Date?
    public var lastSyncedAt: Date?
}

/// The user's devices, of every push service.
public struct DeviceStore: Sendable {
    public let client: PostgresClient

    /// A user keeps at most this many devices; registering one more evicts the least recently registered.
    public static let maximumPerUser = 20

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Registers (or re-registers) the device at `address` for the user. A device registered by
    /// another user moves to this one (a device changes hands when someone else signs in on it).
    /// `unique` removes the user's other devices of the same service. Returns the device, and whether
    /// it is new to this user (not registered before, or until now another user's).
    public func register(userKey: Int64, address: PushAddress, unique: Bool) async throws -> (device: Device, created: Bool) {
        let (service, token) = (address.service.rawValue, address.token)
        let (p256dh, auth) = (address.webPushKeys.map { PostgresBytes($0.p256dh) }, address.webPushKeys.map { PostgresBytes($0.auth) })
        let moved: PostgresQuery = "EXISTS (SELECT 1 FROM previous WHERE previous.user_key <> \(userKey))"
        // One round trip: none of the statements needs another's answer in Swift.
        let results = try await client.transaction([
            // Lock the user's devices in one order so concurrent registrations for a user queue up.
            "SELECT 1 FROM users WHERE key = \(userKey) FOR UPDATE",
            // The device may leave another user, and this user's others may go (below).
            LiveHint.devicesChangedQuery(
                "SELECT user_key FROM devices WHERE token = \(token) AND service = \(service) UNION ALL SELECT \(userKey)"
            ),
            """
            WITH previous AS (SELECT user_key FROM devices WHERE token = \(token) AND service = \(service)),
            device AS (
                INSERT INTO devices (user_key, service, token, environment, topic, webpush_p256dh, webpush_auth)
                VALUES (\(userKey), \(service), \(token), \(address.environment), \(address.topic), \(p256dh), \(auth))
                ON CONFLICT (token, service) DO UPDATE SET user_key = EXCLUDED.user_key, environment = EXCLUDED.environment,
                    topic = EXCLUDED.topic, webpush_p256dh = EXCLUDED.webpush_p256dh, webpush_auth = EXCLUDED.webpush_auth,
                    registered_at = now()
                RETURNING id, service, token, environment, topic, created_at, registered_at
            ),
            state AS (
                INSERT INTO device_push_state (device_id, service) SELECT id, service FROM device
                -- A device that moved starts clean: no refresh state from its previous user.
                ON CONFLICT (device_id) DO UPDATE SET
                    wanted_xid = CASE WHEN \(moved) THEN NULL ELSE device_push_state.wanted_xid END,
                    notification_id = CASE WHEN \(moved) THEN NULL ELSE device_push_state.notification_id END,
                    outstanding = device_push_state.outstanding AND NOT \(moved)
                RETURNING last_push_at, last_synced_at
            )
            SELECT device.*, state.*, NOT EXISTS (SELECT 1 FROM previous WHERE previous.user_key = \(userKey)) FROM device, state
            """,
            unique
                ? "DELETE FROM devices WHERE user_key = \(userKey) AND service = \(service) AND token <> \(token)"
                : """
                DELETE FROM devices WHERE id IN (
                    SELECT id FROM devices WHERE user_key = \(userKey)
                    ORDER BY registered_at DESC, id DESC OFFSET \(Self.maximumPerUser))
                """,
        ])
        // The INSERT … RETURNING always answers one row.
        let row = results[2].first!
        return (try Self.decode(row), try row.decode(column: 9, as: Bool.self))
    }

    /// Registers (or re-registers) an APNs `token` for the user (`register(userKey:address:unique:)`).
    public func register(
        userKey: Int64,
        token: String,
        environment: String,
        topic: String,
        unique: Bool
    ) async throws -> (device: Device, created: Bool) {
        try await register(userKey: userKey, address: .apns(token: token, environment: environment, topic: topic), unique: unique)
    }

    /// The user's devices, most recently registered first.
    public func list(userKey: Int64) async throws -> [Device] {
        try await client.query(
            """
            SELECT \(Self.columns) FROM devices JOIN device_push_state p ON p.device_id = devices.id
            WHERE user_key = \(userKey) ORDER BY registered_at DESC, id DESC
            """
        ).map(Self.decode)
    }

    /// Removes the user's device named by `reference` (its id, or its APNs token); false when the user
    /// has no such device.
    public func unregister(userKey: Int64, reference: DeviceReference) async throws -> Bool {
        try await client.transaction([
            "DELETE FROM devices WHERE user_key = \(userKey) AND \(reference.condition)",
            LiveHint.devicesChangedQuery(userKeys: [userKey]),
        ])[0].affectedRows > 0
    }

    /// Removes all the user's tokens; returns how many.
    public func unregisterAll(userKey: Int64) async throws -> Int {
        try await client.transaction([
            "DELETE FROM devices WHERE user_key = \(userKey)",
            LiveHint.devicesChangedQuery(userKeys: [userKey]),
        ])[0].affectedRows
    }

    /// Every device of the user, with what a push needs (for `herald push test`).
    public func targets(userKey: Int64) async throws -> [PushAddress] {
        try await client.query("SELECT \(PushAddress.columns("d")) FROM devices d WHERE user_key = \(userKey) ORDER BY id").map {
            try PushAddress.decode($0, at: 0)
        }
    }

    /// The id of the user's device named by `reference`; `nil` when the user has no such device.
    public func find(userKey: Int64, reference: DeviceReference) async throws -> Int64? {
        try await client.query(
            """
            SELECT id FROM devices WHERE user_key = \(userKey) AND \(reference.condition)
            """
        ).first?.decode(Int64.self)
    }

    /// A device's columns, from `devices` joined with its `device_push_state` as `p`.
    static let columns: PostgresQuery =
        "id, devices.service, token, environment, topic, created_at, registered_at, p.last_push_at, p.last_synced_at"

    static func decode(_ row: PostgresRow) throws -> Device {
        let (id, service, token, environment, topic, created, registered, pushed, synced) = try row.decode(
            (Int64, String, String, String, String, Date, Date, Date?, Date?).self
        )
        return Device(
            id: id,
            service: PushService(rawValue: service) ?? .apns,
            token: token,
            environment: environment,
            topic: topic,
            createdAt: created,
            registeredAt: registered,
            lastPushAt: pushed,
            lastSyncedAt: synced
        )
    }
}
