import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// Read and seen marks tell live streams (`NOTIFY herald_live`) only when they changed something: a
/// client repeating a mark, or sending an old one, wakes no stream on any process.
@Suite("Mark hints")
struct MarkHintTests {
    @Test func aMarkThatChangesNothingSendsNoHint() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed"))
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let user = try #require(try await UserStore(client: db.client).key("u1"))
            let channelKey = try #require(try await db.client.query("SELECT key FROM channels WHERE url = 'feed'").first?.decode(Int64.self))
            let listener = PostgresListener(conninfo: db.directConninfo, channels: [LiveHint.channel])
            try await withTimeout(.seconds(60), what: "the hints") {
                var events = listener.events().makeAsyncIterator()
                guard case .listening = await events.next() else {
                    Issue.record("expected .listening first")
                    return
                }
                let store = CollectionStore(client: db.client)
                let now = Date()
                var expected = 0
                _ = try await store.markSeen(userKey: user, channelKey: channelKey, at: now)  // opens the channel
                expected += 1
                _ = try await store.markSeen(userKey: user, channelKey: channelKey, at: now.addingTimeInterval(-60))  // older
                _ = try await store.markSeen(userKey: user, channelKey: channelKey, at: now)  // the same
                _ = try await store.markSeen(userKey: user, channelKey: channelKey, at: now.addingTimeInterval(60))  // later
                expected += 1
                _ = try await store.markRead(userKey: user, channelKey: channelKey, ids: [123_456])  // nothing of the user's
                _ = try await store.markRead(userKey: user, channelKey: channelKey, ids: nil)  // moves last_read_at
                expected += 1
                try await db.client.query("SELECT pg_notify(\(LiveHint.channel), 'end')")
                var hints: [LiveHint?] = []
                while case .notification(let notification) = await events.next(), notification.payload != "end" {
                    hints.append(LiveHint.Received(payload: notification.payload)?.hint)
                }
                #expect(hints == Array(repeating: LiveHint.channelState(userKey: user, channelKey: channelKey), count: expected))
            }
        }
    }
}
