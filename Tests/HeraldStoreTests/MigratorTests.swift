import Foundation
import HeraldStore
import HeraldTesting
import Postgres
import Testing

@Suite("Migrations")
struct MigratorTests {
    let first = Migration(name: "0001_accounts", sql: "CREATE TABLE accounts (id text PRIMARY KEY);\nCREATE INDEX accounts_id ON accounts (id);")
    let second = Migration(name: "0002_notes", sql: "CREATE TABLE notes (id int8 PRIMARY KEY, account text REFERENCES accounts);")

    func tables(_ client: PostgresClient) async throws -> Set<String> {
        let rows = try await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return Set(try rows.map { try $0.decode(String.self) })
    }

    @Test func freshApplyThenReapplyIsANoOp() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let migrator = Migrator(client: db.client, migrations: [first, second])
            #expect(try await migrator.status().pending == ["0001_accounts", "0002_notes"])
            let report = try await migrator.migrate()
            #expect(report.applied == ["0001_accounts", "0002_notes"])
            #expect(report.alreadyApplied == 0)
            #expect(try await tables(db.client) == ["accounts", "notes", "herald_schema_migrations"])
            #expect(try await migrator.status().isCurrent)

            let again = try await migrator.migrate()
            #expect(again.applied.isEmpty)
            #expect(again.alreadyApplied == 2)
            let recorded = try await db.client.query("SELECT name, checksum FROM herald_schema_migrations ORDER BY name")
            #expect(try recorded.map { try $0.decode((String, String).self).0 } == ["0001_accounts", "0002_notes"])
            #expect(try recorded.map { try $0.decode((String, String).self).1 } == [first.checksum, second.checksum])
        }
    }

    /// A pool whose statements time out quickly still migrates (a migration may take long), and its
    /// connection keeps the timeout afterwards.
    @Test func migrationsLiftThePoolsStatementTimeoutForThemselves() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let client = PostgresClient(
                configuration: .init(conninfo: db.directConninfo, maximumConnections: 1, statementTimeout: .milliseconds(100))
            )
            defer { Task { await client.shutdown() } }
            let slow = Migration(name: "0001_slow", sql: "SELECT pg_sleep(0.3);\nCREATE TABLE slow (id int);")
            #expect(try await Migrator(client: client, migrations: [slow]).migrate().applied == ["0001_slow"])
            #expect(try await client.query("SHOW statement_timeout")[0].decode(String.self) == "100ms")
            let error = try await #require(throws: PostgresError.self) { try await client.query("SELECT pg_sleep(0.3)") }
            #expect(error.code == .queryCanceled)
        }
    }

    @Test func laterFilesApplyOnTopOfEarlierOnes() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await Migrator(client: db.client, migrations: [first]).migrate()
            let report = try await Migrator(client: db.client, migrations: [first, second]).migrate()
            #expect(report.applied == ["0002_notes"])
            #expect(report.alreadyApplied == 1)
        }
    }

    @Test func editedAppliedFileIsRefused() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await Migrator(client: db.client, migrations: [first]).migrate()
            let edited = Migration(name: first.name, sql: first.sql + "\nALTER TABLE accounts ADD COLUMN sneaky int;")
            let migrator = Migrator(client: db.client, migrations: [edited, second])
            let error = try await #require(throws: MigrationError.self) { try await migrator.migrate() }
            guard case .checksumMismatch(let name, _, _) = error else {
                Issue.record("expected a checksum mismatch, got \(error)")
                return
            }
            #expect(name == "0001_accounts")
            #expect(error.description.contains("must never be edited"))
            // Nothing ran: neither the edit nor the pending second file.
            #expect(try await tables(db.client) == ["accounts", "herald_schema_migrations"])
            #expect(try await migrator.status().problems.count == 1)
        }
    }

    @Test func failingFileLeavesNoTrace() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let broken = Migration(
                name: "0002_broken",
                sql: "CREATE TABLE half_done (id int);\nINSERT INTO half_done VALUES (1);\nSELECT 1 / 0;"
            )
            let migrator = Migrator(client: db.client, migrations: [first, broken])
            let error = try await #require(throws: MigrationError.self) { try await migrator.migrate() }
            #expect(error == .failed(name: "0002_broken", reason: "division by zero"))
            #expect(try await tables(db.client) == ["accounts", "herald_schema_migrations"])
            #expect(try await migrator.status().pending == ["0002_broken"])
            // Fixing the file lets the next run apply it.
            let fixed = Migration(name: "0002_broken", sql: "CREATE TABLE half_done (id int);")
            #expect(try await Migrator(client: db.client, migrations: [first, fixed]).migrate().applied == ["0002_broken"])
        }
    }

    @Test func unknownAppliedMigrationIsReported() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await Migrator(client: db.client, migrations: [first, second]).migrate()
            let older = Migrator(client: db.client, migrations: [first])
            #expect(try await older.status().problems == [.unknownApplied(name: "0002_notes")])
            await #expect(throws: MigrationError.unknownApplied(name: "0002_notes")) { try await older.migrate() }
        }
    }

    @Test func concurrentMigratorsApplyEachFileOnce() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            // On the server itself, as Herald migrates: the lock that makes them take turns is a
            // session's, which a pooler in transaction mode would not keep.
            let direct = PostgresClient(configuration: .init(conninfo: db.directConninfo, maximumConnections: 4))
            let reports = try await withThrowingTaskGroup(of: Migrator.Report.self) { group in
                for _ in 0..<3 {
                    group.addTask { try await Migrator(client: direct, migrations: [first, second]).migrate() }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            await direct.shutdown()
            #expect(reports.flatMap(\.applied).sorted() == ["0001_accounts", "0002_notes"])
        }
    }

    @Test func repositoryMigrationsApplyCleanly() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let migrations = try TestPostgres.repositoryMigrations()
            #expect(!migrations.isEmpty)
            #expect(migrations.map(\.name) == migrations.map(\.name).sorted())
            let report = try await Migrator(client: db.client, migrations: migrations).migrate()
            #expect(report.applied == migrations.map(\.name))
        }
    }

    /// Lines as they shipped, kept as base64: the old wording named notes outside the repository or
    /// measured figures (which now live in docs/decisions/), and only their exact bytes reproduce the
    /// checksums databases recorded.
    static func shipped(_ base64: String) -> String {
        String(decoding: Data(base64Encoded: base64) ?? Data(), as: UTF8.self)
    }

    /// The comments reworded after the files shipped, as they were, newest rewording first: each
    /// earlier text is the one after it with `now` (one or more whole lines) put back to `before`.
    static let rewordings: [String: [(now: String, before: String)]] = [
        "0005_notifications": [
            (
                now: """
                -- "the notification's own". There is deliberately no foreign key: a per-row RI check would be paid by
                -- every copy a fan-out writes (docs/decisions/2026-11-22-fanout-plain-insert.md); the code deletes
                -- recipients with their notification or channel.
                """,
                before: Self.shipped(
                    "LS0gInRoZSBub3RpZmljYXRpb24ncyBvd24iLiBUaGVyZSBpcyBkZWxpYmVyYXRlbHkgbm8gZm9yZWlnbiBrZXk6IHRoZSBwZXItcm93IFJJIGNoZWNrIHdvdWxkIHJvdWdobHkKLS0gZG91YmxlIHRoZSBjb3N0IG9mIGEgZmFuLW91dDsgdGhlIGNvZGUgZGVsZXRlcyByZWNpcGllbnRzIHdpdGggdGhlaXIgbm90aWZpY2F0aW9uIG9yIGNoYW5uZWwu"
                )
            ),
            (
                now: #"-- already handed to a reader and can never be skipped (docs/scaling.md, "Sync and long transactions")."#,
                before: Self.shipped(
                    "LS0gYWxyZWFkeSBoYW5kZWQgdG8gYSByZWFkZXIgYW5kIGNhbiBuZXZlciBiZSBza2lwcGVkIChyZWZlcmVuY2UvcGdkZXNpZ24ubWQgwqdCLjYsIHNvbHV0aW9uIDEpLg=="
                )
            ),
        ],
        "0006_collections": [
            (
                now: """
                -- Unread counts are counters, never a COUNT over a user's copies, and a broadcast must not write a
                -- counter per user it reaches (docs/decisions/2026-11-22-unread-counters-broadcasts-per-channel.md).
                -- So a user's unread count in a channel is
                """,
                before: Self.shipped(
                    "LS0gVW5yZWFkIGNvdW50cyBhcmUgY291bnRlcnMsIG5ldmVyIGEgQ09VTlQgb3ZlciBhIHVzZXIncyBjb3BpZXMsIGFuZCBhIGJyb2FkY2FzdCBtdXN0IG5vdCB3cml0ZQotLSAxMDAsMDAwIGNvdW50ZXJzICh0aGF0IGRvdWJsZWQgdGhlIGZhbi1vdXQncyBjb3N0KS4gU28gYSB1c2VyJ3MgdW5yZWFkIGNvdW50IGluIGEgY2hhbm5lbCBpcw=="
                )
            )
        ],
        "0012_broadcast_folding": [
            (
                now: """
                -- request instead (herald_broadcasts_reaching). That count grew with every broadcast ever sent, and
                -- every poll paid for it (docs/decisions/2026-11-22-broadcast-folding.md). So once a
                """,
                before: Self.shipped(
                    "LS0gcmVxdWVzdCBpbnN0ZWFkIChoZXJhbGRfYnJvYWRjYXN0c19yZWFjaGluZykuIFRoYXQgY291bnQgZ3JldyB3aXRoIGV2ZXJ5IGJyb2FkY2FzdCBldmVyIHNlbnQg4oCUIGFib3V0Ci0tIDAuMTMgbXMgb2YgUG9zdGdyZVNRTCB0aW1lIHBlciBwb2xsIHBlciAxLDAwMCBsaXZlIGJyb2FkY2FzdHMgKGRvY3MvYmVuY2htYXJrcy5tZCkuIFNvIG9uY2UgYQ=="
                )
            )
        ],
        "0013_user_channels": [
            (
                now: """
                -- cost of GET /v1/me/unread and GET /v1/me/channels, and spelling the count out (herald_broadcasts_
                -- reaching's, as below) more than doubled the badge query's rate
                -- (docs/decisions/2026-11-22-sql-functions-planned-per-execution.md).
                """,
                before: Self.shipped(
                    "LS0gY29zdCBvZiBHRVQgL3YxL21lL3VucmVhZCBhbmQgR0VUIC92MS9tZS9jaGFubmVsczogdGhlIGJhZGdlIHF1ZXJ5IHJhbiAzLDgwMOKAkzQsMjAwIHRpbWVzIGEgc2Vjb25kCi0tIHVuZGVyIGBwZ2JlbmNoIC1NIHByZXBhcmVkYCBhdCBvbmUgY2xpZW50IHdpdGggdGhlIG9sZCBib2R5LCA5LDcwMOKAkzExLDEwMCB3aXRoIHRoZSBjb3VudCBzcGVsbGVkCi0tIG91dCAoaGVyYWxkX2Jyb2FkY2FzdHNfcmVhY2hpbmcncywgYXMgYmVsb3c7IGRvY3MvYmVuY2htYXJrcy5tZCku"
                )
            )
        ],
        "0014_channel_list_changes": [
            (
                now: "-- The channel list's own change log: `GET /v1/me/channels?token=` answers the entries",
                before: Self.shipped(
                    "LS0gVGhlIGNoYW5uZWwgbGlzdCdzIG93biBjaGFuZ2UgbG9nIChERVNJR04gwqc0KTogYEdFVCAvdjEvbWUvY2hhbm5lbHM/dG9rZW49YCBhbnN3ZXJzIHRoZSBlbnRyaWVz"
                )
            )
        ],
        "0015_uncounted_notifications": [
            (
                now: """
                -- the notifications (docs/decisions/2026-11-23-alert-badges-beside-many-notifications.md).
                """,
                before: Self.shipped(
                    "LS0gdGhlIG5vdGlmaWNhdGlvbnMgKGRvY3MvYmVuY2htYXJrcy5tZCwgIkFsZXJ0IGJhZGdlcyBiZXNpZGUgbWFueSBub3RpZmljYXRpb25zIjogMzQgbXMgd2l0aCBhCi0tIGN1c3RvbSBwbGFuIGFuZCAxNzQgbXMgd2l0aCB0aGUgZ2VuZXJpYyBvbmUg4oaSIDEuMCBtcyBwZXIgYmF0Y2ggb2YgNTAwIHVzZXJzIGF0IDEsMDAwLDAwMAotLSBub3RpZmljYXRpb25zKS4="
                )
            )
        ],
        "0021_user_channels_among": [
            (
                now: """
                -- the user has, most of the cost of a change log that found nothing had changed
                -- (docs/decisions/2026-11-25-change-log-for-the-changed-channels-only.md). The rule now lives here,
                -- with the candidate channels narrowed to
                """,
                before: Self.shipped(
                    "LS0gdGhlIHVzZXIgaGFzOiBhdCAxLDAwMCBjaGFubmVscywgNyBtcyBvZiBhIGNoYW5nZSBsb2cgdGhhdCBmb3VuZCBub3RoaW5nIGhhZCBjaGFuZ2VkCi0tIChkb2NzL2JlbmNobWFya3MubWQsIGBjdXJ2ZXNgKS4gVGhlIHJ1bGUgbm93IGxpdmVzIGhlcmUsIHdpdGggdGhlIGNhbmRpZGF0ZSBjaGFubmVscyBuYXJyb3dlZCB0bw=="
                )
            )
        ],
    ]

    /// A database that applied a file before its comments were reworded still migrates: each earlier
    /// checksum is accepted, and they are exactly the checksums of the file with only those comments
    /// changed back. Any other change to an applied file is still refused (`editedAppliedFileIsRefused`).
    @Test func filesWhoseCommentsWereRewordedStillMatchTheirEarlierChecksums() async throws {
        let current = try TestPostgres.repositoryMigrations()
        #expect(Set(Self.rewordings.keys) == Set(current.filter { !$0.earlierChecksums.isEmpty }.map(\.name)))
        // Every database state a shipped text may have left: the oldest texts, then each rewording in turn.
        var oldest: [Migration] = []
        for migration in current {
            guard let wordings = Self.rewordings[migration.name] else {
                oldest.append(migration)
                continue
            }
            var text = migration.sql
            var checksums: Set<String> = []
            for wording in wordings {
                #expect(text.components(separatedBy: wording.now).count == 2, "\(migration.name) holds the newer wording once")
                text = text.replacingOccurrences(of: wording.now, with: wording.before)
                checksums.insert(Migration(name: migration.name, sql: text).checksum)
            }
            #expect(migration.earlierChecksums == checksums, "\(migration.name)")
            oldest.append(Migration(name: migration.name, sql: text))
        }
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            try await Migrator(client: db.client, migrations: oldest).migrate()
            let migrator = Migrator(client: db.client, migrations: current)
            let status = try await migrator.status()
            #expect(status.problems.isEmpty)
            #expect(status.isCurrent)
            #expect(try await migrator.migrate().applied.isEmpty)
        }
    }

    @Test func loadsFilesInNameOrder() throws {
        let directory = NSTemporaryDirectory() + "herald-sql-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "SELECT 2;".write(toFile: directory + "/0010_later.sql", atomically: true, encoding: .utf8)
        try "SELECT 1;".write(toFile: directory + "/0002_earlier.sql", atomically: true, encoding: .utf8)
        try "not a migration".write(toFile: directory + "/README.md", atomically: true, encoding: .utf8)
        let loaded = try Migration.load(from: directory)
        #expect(loaded.map(\.name) == ["0002_earlier", "0010_later"])
        #expect(loaded[0].checksum == Migration(name: "x", sql: "SELECT 1;").checksum)
        #expect(loaded[0].checksum.count == 64)
    }
}
