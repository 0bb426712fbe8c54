import Foundation
import HeraldTesting
import Postgres
import Testing

@Suite("Type round trips")
struct TypeRoundTripTests {
    /// Sends `value` as a bound parameter and decodes what the server returns for `SELECT $1::type`.
    func roundTrip<V: PostgresEncodable & PostgresDecodable>(_ value: V, as type: String, on client: PostgresClient) async throws -> V {
        let row = try #require(try await client.query("SELECT \(value)::\(unescaped: type)").first)
        return try row.decode(V.self)
    }

    func roundTripNull<V: PostgresEncodable & PostgresDecodable>(_: V.Type, as type: String, on client: PostgresClient) async throws -> V? {
        let none: V? = nil
        let row = try #require(try await client.query("SELECT \(none)::\(unescaped: type)").first)
        return try row.decode(V?.self)
    }

    @Test func scalarsRoundTrip() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = db.client
            #expect(
                try await roundTrip("Grüße, 世界 👋 — \"quoted\" 'single' \\ back", as: "text", on: client)
                    == "Grüße, 世界 👋 — \"quoted\" 'single' \\ back"
            )
            #expect(try await roundTrip("", as: "text", on: client) == "")
            #expect(try await roundTrip(true, as: "bool", on: client) == true)
            #expect(try await roundTrip(false, as: "bool", on: client) == false)
            #expect(try await roundTrip(Int32.min, as: "int4", on: client) == Int32.min)
            #expect(try await roundTrip(Int32(2_147_483_647), as: "int4", on: client) == Int32.max)
            #expect(try await roundTrip(Int.max, as: "int8", on: client) == Int.max)
            #expect(try await roundTrip(-42, as: "int8", on: client) == -42)
            #expect(try await roundTrip(3.141592653589793, as: "float8", on: client) == 3.141592653589793)
            #expect(try await roundTrip(-0.0, as: "float8", on: client) == 0)
            let uuid = UUID()
            #expect(try await roundTrip(uuid, as: "uuid", on: client) == uuid)
        }
    }

    @Test func nullRoundTripsForEveryType() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = db.client
            #expect(try await roundTripNull(String.self, as: "text", on: client) == nil)
            #expect(try await roundTripNull(Bool.self, as: "bool", on: client) == nil)
            #expect(try await roundTripNull(Int32.self, as: "int4", on: client) == nil)
            #expect(try await roundTripNull(Int.self, as: "int8", on: client) == nil)
            #expect(try await roundTripNull(Double.self, as: "float8", on: client) == nil)
            #expect(try await roundTripNull(PostgresTimestamp.self, as: "timestamptz", on: client) == nil)
            #expect(try await roundTripNull(PostgresBytes.self, as: "bytea", on: client) == nil)
            #expect(try await roundTripNull(PostgresJSONB.self, as: "jsonb", on: client) == nil)
            #expect(try await roundTripNull(UUID.self, as: "uuid", on: client) == nil)
            #expect(try await roundTripNull([String].self, as: "text[]", on: client) == nil)
            #expect(try await roundTripNull([Int].self, as: "int8[]", on: client) == nil)
        }
    }

    @Test func nullIntoNonOptionalIsATypedError() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let row = try #require(try await db.client.query("SELECT NULL::text AS nickname").first)
            #expect(throws: PostgresDecodingError.self) { try row.decode(String.self) }
            #expect(throws: PostgresDecodingError.self) { try row.decode(column: 0, as: Int.self) }
        }
    }

    @Test func timestampsKeepMicroseconds() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let exact = PostgresTimestamp(microsecondsSince1970: 1_795_000_000_123_457)
            #expect(try await roundTrip(exact, as: "timestamptz", on: db.client) == exact)
            // The server agrees on the value, not just on the bytes: compare with its own text form.
            let row = try #require(try await db.client.query("SELECT to_char(\(exact) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')").first)
            #expect(try row.decode(String.self) == "2026-11-18 11:06:40.123457")
            let beforeEpoch = PostgresTimestamp(microsecondsSince1970: -1_000_001)
            #expect(try await roundTrip(beforeEpoch, as: "timestamptz", on: db.client) == beforeEpoch)
            let date = Date(timeIntervalSince1970: 1_795_000_000.654321)
            let back = try await roundTrip(date, as: "timestamptz", on: db.client)
            #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001)
        }
    }

    @Test func byteaOfOneMebibyte() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let back = try await roundTrip(PostgresBytes(bytes), as: "bytea", on: db.client)
            #expect(back.bytes.count == 1 << 20)
            #expect(back.bytes == bytes)
            #expect(try await roundTrip(PostgresBytes([]), as: "bytea", on: db.client) == PostgresBytes([]))
        }
    }

    @Test func jsonbRoundTripsThroughTheServer() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let value = PostgresJSONB(#"{"title":"Ünïcode ✓","n":[1,2,3],"nested":{"ok":true}}"#)
            let back = try await roundTrip(value, as: "jsonb", on: db.client)
            let original = try JSONSerialization.jsonObject(with: Data(value.utf8)) as? NSDictionary
            let returned = try JSONSerialization.jsonObject(with: Data(back.utf8)) as? NSDictionary
            #expect(original == returned)
            // The server parsed it: it can index into it.
            let row = try #require(try await db.client.query("SELECT \(value)->'nested'->>'ok', \(value)->>'title'").first)
            #expect(try row.decode((String, String).self) == ("true", "Ünïcode ✓"))
        }
    }

    @Test func arraysRoundTripIncludingEmpty() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = db.client
            #expect(
                try await roundTrip(["a", "Grüße", "", "with,comma", "{brace}", "\"q\""], as: "text[]", on: client) == [
                    "a", "Grüße", "", "with,comma", "{brace}", "\"q\"",
                ]
            )
            #expect(try await roundTrip([String](), as: "text[]", on: client) == [])
            #expect(try await roundTrip([1, -2, Int.max, Int.min], as: "int8[]", on: client) == [1, -2, Int.max, Int.min])
            #expect(try await roundTrip([Int](), as: "int8[]", on: client) == [])
            // Arrays drive set-based statements: unnest sees every element.
            let ids = (1...1000).map { "user-\($0)" }
            let row = try #require(try await client.query("SELECT count(*), max(length(u)) FROM unnest(\(ids)) AS u").first)
            #expect(try row.decode((Int, Int).self) == (1000, 9))
        }
    }

    @Test func interpolatedValuesAreNeverSQL() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE victims (name text)")
            let hostile = "x'); DROP TABLE victims; --"
            try await db.client.query("INSERT INTO victims (name) VALUES (\(hostile))")
            let row = try #require(try await db.client.query("SELECT name FROM victims").first)
            #expect(try row.decode(String.self) == hostile)
        }
    }

    @Test func rowsDecodeByNameAndReportAffectedCounts() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await db.client.query("CREATE TABLE items (id int8 PRIMARY KEY, label text)")
            let inserted = try await db.client.query("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 25) g")
            #expect(inserted.affectedRows == 25)
            let rows = try await db.client.query("SELECT id, label FROM items WHERE id <= \(3) ORDER BY id")
            #expect(rows.count == 3)
            #expect(rows.columnNames == ["id", "label"])
            #expect(try rows.map { try $0.decode(column: "label", as: String.self) } == ["item 1", "item 2", "item 3"])
        }
    }
}
