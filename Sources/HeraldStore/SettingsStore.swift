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
    /// replica needs it first; `nil` when the stored one does not open with this server's secret key.
    public func vapidKey(box: SecretBox) async throws -> P256Key? {
        try await client.query(
            """
            INSERT INTO herald_settings (name, value) VALUES ('vapid_key', \(Self.sealed(P256Key(), box: box))) ON CONFLICT DO NOTHING
            """
        )
        guard let row = try await client.query("SELECT value FROM herald_settings WHERE name = 'vapid_key'").first,
            let pem = try? box.open(try row.decode(PostgresBytes.self).bytes, context: "vapid")
        else { return nil }
        return try? P256Key(pem: String(decoding: pem, as: UTF8.self))
    }

    /// Replaces the VAPID key with an uploaded one (browsers subscribed with the old one must
    /// subscribe again: their push services refuse the new key).
    public func replaceVAPIDKey(_ key: P256Key, box: SecretBox) async throws {
        try await client.query(
            """
            INSERT INTO herald_settings (name, value) VALUES ('vapid_key', \(Self.sealed(key, box: box)))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """
        )
    }

    /// A value that changes when the VAPID key does (its sealed form).
    public func vapidFingerprint() async throws -> [UInt8]? {
        try await client.query("SELECT value FROM herald_settings WHERE name = 'vapid_key'").first?.decode(PostgresBytes.self).bytes
    }

    private static func sealed(_ key: P256Key, box: SecretBox) -> PostgresBytes {
        PostgresBytes(box.seal(Array(key.pem.utf8), context: "vapid"))
    }
}
