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
}
