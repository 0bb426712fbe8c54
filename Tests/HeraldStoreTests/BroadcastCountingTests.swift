import HeraldCore
import HeraldStore
import HeraldTesting
import Postgres
import Testing

/// The counters' invariant at the store, with no HTTP in between: while a broadcast fans out and then
/// folds into the counters, batch by batch, every user's unread count is exactly the number of unread
/// copies they hold, and a poll sees the same.
@Suite("Broadcast counting")
struct BroadcastCountingTests {
    static let users = (0..<23).map { "user-\($0)" }

    @Test func everyBatchOfFanOutAndFoldingKeepsEveryCountTrue() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let client = db.client
            let userStore = UserStore(client: client)
            var keys: [String: Int64] = [:]
            for id in Self.users {
                _ = try await userStore.upsert(id: id, nickname: nil, profileURL: nil)
                let key = try #require(try await userStore.key(id))
                keys[id] = key
            }
            _ = try await ChannelStore(client: client).put(
                Channel(url: "news", kind: .feed, categories: [.init(id: "general", name: "General", isDefault: true)])
            )
            let template = Template(key: "hello", name: "Hello", variables: [], data: .object(["title": .string("Hello")]))
            _ = try await TemplateStore(client: client).put(template)
            let notifications = NotificationStore(client: client)
            let collections = CollectionStore(client: client)
            let channel = try #require(try await collections.channel("news"))

            /// Every user's unread count, from the counters as the badge and a poll read them, against
            /// their live unread copies (status below READ, 2) counted row by row.
            func check(_ moment: String) async throws {
                let copies = try await client.query(
                    "SELECT user_key, count(*) FROM notification_recipients WHERE NOT deleted AND status < 2 GROUP BY user_key"
                )
                var live: [Int64: Int64] = [:]
                for row in copies {
                    let (user, count) = try row.decode((Int64, Int64).self)
                    live[user] = count
                }
                for (id, key) in keys {
                    let unread = try await collections.unread(userKey: key)
                    let poll = try #require(
                        try await collections.poll(.init(userKey: key, channelURL: "news", filter: .inbox, after: .through(xid: 0), limit: 0))
                    )
                    #expect(unread.total == live[key, default: 0], "\(moment): \(id)'s badge")
                    #expect(poll.snapshot.state.unreadCount == live[key, default: 0], "\(moment): \(id)'s unread in the poll")
                }
            }

            for round in 1...2 {
                let draft = NotificationDraft(
                    channelURL: "news",
                    templateKey: "hello",
                    templateVersion: 1,
                    variables: [:],
                    content: try template.renderNotification(variables: [:], userVariables: [:]),
                    category: "general",
                    tags: [],
                    eventDeadline: nil,
                    push: PushOptions(),
                    audience: .all
                )
                _ = try await notifications.send(draft, idempotency: nil) { _ in StoredResponse(status: 202, body: []) }
                try await check("round \(round), sent")
                var batches = 0
                while let progress = try await notifications.fanOutNextBatch(size: 5) {
                    batches += 1
                    try await check("round \(round), fan-out batch \(batches)")
                    if progress.finished { break }
                }
                #expect(batches == 5, "23 users in batches of 5")
                var folds = 0
                while let progress = try await notifications.foldNextBatch(size: 4) {
                    folds += 1
                    try await check("round \(round), fold batch \(folds)")
                    if progress.finished { break }
                }
                #expect(folds >= 6, "23 users folded in batches of 4")
                // Reading one user's copies moves only that user's count.
                let first = try #require(keys[Self.users[0]])
                _ = try await collections.markRead(userKey: first, channelKey: channel.key, ids: nil)
                try await check("round \(round), one user read")
                let read = try await collections.unread(userKey: first)
                #expect(read.total == 0)
            }
        }
    }
}
