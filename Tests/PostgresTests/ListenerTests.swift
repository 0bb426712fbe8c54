import Foundation
import HeraldTesting
import Postgres
import Testing

@Suite("LISTEN/NOTIFY")
struct ListenerTests {
    @Test func receivesNotificationsAlsoAfterReconnect() async throws {
        try await TestPostgres.withDatabase(migrated: false) { (db: TestDatabase) async throws in
            let channel = "herald_test_\(UUID().uuidString.prefix(8).lowercased())"
            let listener = PostgresListener(conninfo: db.conninfo, channels: [channel])
            try await withTimeout(.seconds(60), what: "notifications") {
                var events = listener.events().makeAsyncIterator()

                guard case .listening(let firstPID) = await events.next() else {
                    Issue.record("expected .listening first")
                    return
                }
                try await db.client.query("SELECT pg_notify(\(channel), \("hello"))")
                let first = await events.next()
                #expect(first == .notification(PostgresNotification(channel: channel, payload: "hello", senderPID: senderPID(first))))

                // Kill the listener's backend: the listener says so, then reconnects and LISTENs again.
                try await db.client.query("SELECT pg_terminate_backend(\(firstPID))")
                #expect(await events.next() == .disconnected)
                guard case .listening(let secondPID) = await events.next() else {
                    Issue.record("expected .listening after reconnect")
                    return
                }
                #expect(secondPID != firstPID)
                try await db.client.query("SELECT pg_notify(\(channel), \("again"))")
                guard case .notification(let second) = await events.next() else {
                    Issue.record("expected a notification after reconnect")
                    return
                }
                #expect(second.channel == channel)
                #expect(second.payload == "again")
            }
        }
    }

    private func senderPID(_ event: PostgresListenerEvent?) -> Int32 {
        if case .notification(let notification) = event { return notification.senderPID }
        return -1
    }
}
