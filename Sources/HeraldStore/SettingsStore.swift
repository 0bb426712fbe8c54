import HeraldCore
import Postgres

/// Server-wide values every replica shares, kept in the database.
public struct SettingsStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The HMAC key of sync tokens: 32 random bytes, created by whichever replica needs it first.
    public func syncTokenKey() async throws -> [UInt8] {
        try await client.query(
            "INSERT INTO herald_settings (name, value) VALUES ('sync_token_key', \(PostgresBytes(SecureRandom.bytes(32)))) ON CONFLICT DO NOTHING"
        )
        let row = try await client.query("SELECT value FROM herald_settings WHERE name = 'sync_token_key'").first!
        return try row.decode(PostgresBytes.self).bytes
    }

    /// The server's VAPID key for Web Push (its PEM, sealed under the secret key), made by whichever
    /// replica needs it first, and its sealed form (which changes when the key does); the key is `nil`
    /// when the stored one does not open with this server's secret key.
    public func vapidKey(box: SecretBox) async throws -> (key: P256Key?, sealed: [UInt8]) {
        if let stored = try await storedVAPIDKey() { return (Self.open(stored, box: box), stored) }
        try await client.query(
            """
            INSERT INTO herald_settings (name, value) VALUES ('vapid_key', \(PostgresBytes(Self.seal(P256Key(), box: box)))) ON CONFLICT DO NOTHING
            """
        )
        // Another replica's key when it made one first.
        guard let stored = try await storedVAPIDKey() else { throw SettingsError.vapidKeyMissing }
        return (Self.open(stored, box: box), stored)
    }

    /// Replaces the VAPID key with an uploaded one. The subscriptions browsers made with the old key
    /// go with it, in the same transaction: their push services refuse pushes signed with another, and
    /// the pages must subscribe again. Returns how many went.
    public func replaceVAPIDKey(_ key: P256Key, box: SecretBox) async throws -> Int {
        let results = try await client.transaction([
            """
            INSERT INTO herald_settings (name, value) VALUES ('vapid_key', \(PostgresBytes(Self.seal(key, box: box))))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """,
            LiveHint.devicesChangedQuery("SELECT DISTINCT user_key FROM devices WHERE service = 'webpush'"),
            "DELETE FROM devices WHERE service = 'webpush'",
        ])
        return results[2].affectedRows
    }

    /// The sealed form of the stored VAPID key, if there is one: it changes when the key does.
    public func storedVAPIDKey() async throws -> [UInt8]? {
        try await client.query("SELECT value FROM herald_settings WHERE name = 'vapid_key'").first?.decode(PostgresBytes.self).bytes
    }

    private static func seal(_ key: P256Key, box: SecretBox) -> [UInt8] {
        box.seal(Array(key.pem.utf8), context: "vapid")
    }

    private static func open(_ sealed: [UInt8], box: SecretBox) -> P256Key? {
        guard let pem = try? box.open(sealed, context: "vapid") else { return nil }
        return try? P256Key(pem: String(decoding: pem, as: UTF8.self))
    }
}

/// A setting that should be there is not.
public enum SettingsError: Error {
    /// Inserted, yet not found: the settings table is being changed under the server.
    case vapidKeyMissing
}
