import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

@Suite("Session expiry")
struct SessionExpiryTests {
    @Test func housekeepingRemovesExpiredSessionsAndOnlyThose() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let sessions = SessionStore(client: db.client)
            let live = try #require(try await sessions.create(userID: "u1", lifetime: 3600))
            let expired = try #require(try await sessions.create(userID: "u1", lifetime: 3600))
            try await db.client.query(
                "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = \(PostgresBytes(expired.token.hash))"
            )
            #expect(try await sessions.deleteExpired() == 1)
            #expect(try await sessions.deleteExpired() == 0)
            #expect(try await sessions.isValid(live.token))
            let left = try await db.client.query("SELECT count(*) FROM sessions")[0].decode(Int64.self)
            #expect(left == 1)
        }
    }
}
