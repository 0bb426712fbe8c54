import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// A topic's fan-out batch tells live streams and memory (`NOTIFY herald_live`) of its recipients
/// only: its range of user keys holds users who are not subscribers, whose kept answers and long
/// polls must not be disturbed by it.
@Suite("Topic hints")
struct TopicHintTests {
    @Test func aTopicBatchNamesItsRecipientsNotItsRange() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await ChannelStore(client: db.client).put(HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed"))
            _ = try await TemplateStore(client: db.client).put(StoreWorld.template)
            var made: [Int64] = []
            for user in ["u1", "u2", "u3", "u4", "u5", "u6"] {
                _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
                made.append(try #require(try await UserStore(client: db.client).key(user)))
            }
            let keys = made
            let topics = TopicStore(client: db.client)
            _ = try await topics.put(id: "watchers", name: "", selfSubscribe: false)
            _ = try await topics.addSubscribers(topic: "watchers", userIDs: ["u2", "u5"])
            let channelKey = try #require(try await db.client.query("SELECT key FROM channels WHERE url = 'feed'").first?.decode(Int64.self))
            let listener = PostgresListener(conninfo: db.directConninfo, channels: [LiveHint.channel])
            try await withTimeout(.seconds(60), what: "the hints") {
                var events = listener.events().makeAsyncIterator()
                guard case .listening = await events.next() else {
                    Issue.record("expected .listening first")
                    return
                }
                let id = try await StoreWorld.send("to the watchers", to: .topic("watchers"), in: "feed", category: "", on: db).id
                while try await NotificationStore(client: db.client).fanOutNextBatch(size: 10) != nil {}
                try await db.client.query("SELECT pg_notify(\(LiveHint.channel), 'end')")
                var hints: [LiveHint] = []
                while case .notification(let notification) = await events.next(), notification.payload != "end" {
                    if let hint = LiveHint.Received(payload: notification.payload)?.hint { hints.append(hint) }
                }
                let created = hints.filter {
                    if case .notification(.created, _, _, _) = $0 { return true }
                    return false
                }
                #expect(created == [.notification(.created, id: id, channelKey: channelKey, recipients: .users([keys[1], keys[4]]))])
            }
        }
    }
}
