import HeraldTesting
import Postgres
import Testing

@Suite("COPY FROM STDIN")
struct CopyTests {
    @Test func copiesRowsAndLeavesTheConnectionUsableAfterBadData() async throws {
        try await TestPostgres.withDatabase(migrated: false, maximumConnections: 1) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE copied (id int8 PRIMARY KEY, label text)")
            let rows = (1...2_500).map { "\($0)\tlabel \($0)\n" }.joined()
            let copied = try await db.client.withConnection { connection in
                try await connection.copyFrom("COPY copied (id, label) FROM STDIN", data: Array(rows.utf8))
            }
            #expect(copied == 2_500)

            // A duplicate key fails the whole COPY; the server's error comes back and nothing is added.
            let error = await #expect(throws: PostgresError.self) {
                try await db.client.withConnection { connection in
                    try await connection.copyFrom("COPY copied (id, label) FROM STDIN", data: Array("9000\tnew\n1\tagain\n".utf8))
                }
            }
            #expect(error?.code == .uniqueViolation)
            // Not a COPY statement at all.
            await #expect(throws: PostgresError.self) {
                try await db.client.withConnection { connection in
                    try await connection.copyFrom("SELECT 1", data: [])
                }
            }
            // The single connection is still in a usable state.
            let count = try await db.client.query("SELECT count(*), max(label) FROM copied").first!.decode((Int, String).self)
            #expect(count.0 == 2_500)
            #expect(count.1 == "label 999")
        }
    }
}
