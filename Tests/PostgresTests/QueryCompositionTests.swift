import HeraldTesting
import Postgres
import Testing

@Suite("Composed statements")
struct QueryCompositionTests {
    @Test func aFragmentsParametersFollowTheStatementsOwn() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let name: String? = nil
            let between: PostgresQuery = "x BETWEEN \(Int64(3)) AND \(Int64(5))"
            let labelled: PostgresQuery = "coalesce(\(name), \("fallback")) || ' $1 ' || \("!")"
            let query: PostgresQuery = """
                SELECT array_agg(x ORDER BY x), \(labelled), \(Int64(10)) + \(Int64(1))
                FROM generate_series(1, \(Int64(9))) AS x WHERE \(between) AND \(between)
                """
            // Seven parameters of the statement and its fragments, numbered in order; the quoted `$1`
            // is text, not a placeholder.
            #expect(
                query.sql == """
                    SELECT array_agg(x ORDER BY x), coalesce($1, $2) || ' $1 ' || $3, $4 + $5
                    FROM generate_series(1, $6) AS x WHERE x BETWEEN $7 AND $8 AND x BETWEEN $9 AND $10
                    """
            )
            #expect(query.bindings.count == 10)
            let row = try #require(try await db.client.query(query).first)
            let (values, label, sum) = try row.decode(([Int64], String, Int64).self)
            #expect(values == [3, 4, 5])
            #expect(label == "fallback $1 !")
            #expect(sum == 11)
        }
    }

    @Test func aFragmentWithoutParametersIsSplicedAsItIs() {
        let columns: PostgresQuery = "a, b"
        let query: PostgresQuery = "SELECT \(columns), \(Int64(1)) FROM t WHERE \("$x" as String) = $$a$$"
        #expect(query.sql == "SELECT a, b, $1 FROM t WHERE $2 = $$a$$")
    }
}
