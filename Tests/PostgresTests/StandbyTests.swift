import Foundation
import HeraldTesting
import Postgres
import Testing

/// A hot standby made by the test support: it replays what the primary commits, answers reads, refuses
/// writes, and with a replay delay lags by at least that much.
@Suite("Standby")
struct StandbyTests {
    @Test func theStandbyReplaysThePrimaryAndRefusesWrites() async throws {
        try await TestPostgres.withStandby { primary, standby in
            let writer = PostgresClient(configuration: .init(conninfo: primary.conninfo(), maximumConnections: 1))
            let reader = PostgresClient(configuration: .init(conninfo: standby.conninfo(), maximumConnections: 1))
            defer {
                Task {
                    await writer.shutdown()
                    await reader.shutdown()
                }
            }
            #expect(try await reader.query("SELECT pg_is_in_recovery()").first?.decode(Bool.self) == true)
            try await writer.query("CREATE TABLE marks (n int)")
            try await writer.query("INSERT INTO marks VALUES (1)")
            try await waitUntil("the table on the standby") { !(try await reader.query("SELECT 1 FROM pg_class WHERE relname = 'marks'")).isEmpty }
            try await waitUntil("the row on the standby") {
                try await reader.query("SELECT count(*) FROM marks WHERE n = 1").first?.decode(Int64.self) == 1
            }
            await #expect(throws: PostgresError.self) { try await reader.query("INSERT INTO marks VALUES (2)") }
        }
    }

    @Test func aReplayDelayHoldsTheStandbyBehind() async throws {
        try await TestPostgres.withStandby(applyDelay: .seconds(2)) { primary, standby in
            let writer = PostgresClient(configuration: .init(conninfo: primary.conninfo(), maximumConnections: 1))
            let reader = PostgresClient(configuration: .init(conninfo: standby.conninfo(), maximumConnections: 1))
            defer {
                Task {
                    await writer.shutdown()
                    await reader.shutdown()
                }
            }
            try await writer.query("CREATE TABLE marks (n int)")
            try await waitUntil("the table on the standby") { !(try await reader.query("SELECT 1 FROM pg_class WHERE relname = 'marks'")).isEmpty }
            let clock = ContinuousClock()
            let committed = clock.now
            try await writer.query("INSERT INTO marks VALUES (1)")
            // Right after the commit the standby has the WAL but holds its replay for two seconds.
            #expect(try await reader.query("SELECT count(*) FROM marks").first?.decode(Int64.self) == 0)
            try await waitUntil("the delayed row on the standby") {
                try await reader.query("SELECT count(*) FROM marks").first?.decode(Int64.self) == 1
            }
            #expect(clock.now - committed >= .seconds(2))
        }
    }
}
