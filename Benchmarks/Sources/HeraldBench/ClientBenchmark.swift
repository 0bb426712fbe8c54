import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres

/// The `client` case: what the client library costs an app. One user with `--notifications` in a feed
/// on a real `herald serve`: the time to page the whole collection in and the memory it then holds,
/// and the time to apply a sync of `--changes` edits (the largest a token may fall behind and stay
/// live) beside a quiet sync, over several rounds.
struct ClientBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "HeraldClient: a large collection's load time and memory, and applying a large sync."
    )

    @Option(help: "Notifications in the user's collection.")
    var notifications: Int = 10_000

    @Option(help: "Notifications edited before each measured sync (at most the huge-gap threshold, 300).")
    var changes: Int = 300

    @Option(help: "Measured rounds of edits and sync.")
    var rounds: Int = 5

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        guard notifications > 0, (1...300).contains(changes), rounds > 0 else {
            throw ValidationError("need notifications > 0, changes in 1…300, rounds > 0")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_client_bench", connections: 4) { client, http, conninfo, _ in
            let session = try await seed(client)
            let serve = try await ServeProcess.start(conninfo: conninfo, adminToken: Self.adminToken)
            defer { serve.process.signal(SIGKILL) }
            let port = serve.port
            try await measure(url: URL(string: "http://127.0.0.1:\(port)")!, session: session, http: http, port: port)
        }
    }

    /// The measured part, on the main actor where the library's objects live.
    @MainActor
    private func measure(url: URL, session: String, http: HTTPClient, port: Int) async throws {
        let clock = ContinuousClock()

        // The whole collection, a page of 100 at a time, and the memory it holds.
        let before = ServeProcess.residentMegabytes(getpid())
        let herald = await HeraldClient(configuration: .init(serverURL: url), userID: "bench", sessionToken: session)
        let feed = await herald.collection(channelURL: "feed")
        feed.pageSize = 100
        let loadStart = clock.now
        try await feed.refresh()
        while feed.hasPrevious { try await feed.loadPrevious() }
        let loaded = clock.now - loadStart
        let after = ServeProcess.residentMegabytes(getpid())
        guard feed.notifications.count == notifications else { throw ValidationError("loaded \(feed.notifications.count) of \(notifications)") }
        print("Loaded \(notifications) notifications in \(Self.milliseconds(loaded)) ms (\(notifications / 100) pages of 100)")
        let ids = feed.notifications.map(\.id)
        print(
            "Resident memory: \(before) MB before the client, \(after) MB with the collection: \(after - before) MB, \((after - before) * 1_048_576 / notifications) bytes a notification"
        )

        // The same pages fetched as bytes alone, to tell the server's and the network's part from the
        // library's (decoding, applying).
        var raw: [Duration] = []
        for page in stride(from: 0, to: min(ids.count, 2_000), by: 100) {
            var request = HTTPClientRequest(url: "\(url.absoluteString)/v1/me/channels/feed/notifications?limit=100&before=\(ids[page])")
            request.headers.add(name: "Authorization", value: "Bearer \(session)")
            let start = clock.now
            let response = try await http.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 24)
            raw.append(clock.now - start)
        }
        print("A page of 100 as bytes alone (HTTP, no decoding): \(Self.summary(raw))")

        // Rounds: a quiet sync (nothing changed), then `changes` edits and the sync that brings them.
        var quiet: [Duration] = []
        var large: [Duration] = []
        for round in 0..<rounds {
            let start = clock.now
            guard try await !feed.refresh() else { throw ValidationError("a quiet sync changed something") }
            quiet.append(clock.now - start)
            for id in ids.shuffled().prefix(changes) {
                try await edit(http, port: port, id: id, title: "round \(round)")
            }
            let syncStart = clock.now
            guard try await feed.refresh() else { throw ValidationError("the sync brought nothing") }
            large.append(clock.now - syncStart)
            guard feed.reloadCount == 0, feed.notifications.filter({ $0.data["title"]?.stringValue == "round \(round)" }).count == changes else {
                throw ValidationError("round \(round): the sync did not bring every edit incrementally")
            }
        }
        print("Quiet sync (one request): \(Self.summary(quiet))")
        print("Sync of \(changes) edits (\((changes + 99) / 100) requests of 100), applied to \(notifications) held: \(Self.summary(large))")
    }

    /// One user (`bench-1`) with `notifications` copies in `feed`, written in bulk; their session.
    private func seed(_ client: PostgresClient) async throws -> String {
        print("Creating one user with \(notifications) notifications…")
        try await client.query("INSERT INTO users (id) VALUES ('bench-1')")
        try await BenchSeed.feedAndPlainTemplate(client)
        try await client.withTransaction { connection in
            let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint").first!.decode(Int64.self)
            try await connection.query(BenchSeed.notificationsInsert(count: notifications))
            try await connection.query(
                "INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid) SELECT 1, 1, n.id, \(xid) FROM notifications n"
            )
            try await connection.query(
                "INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id) VALUES (1, 1, \(notifications), \(notifications))"
            )
        }
        try await client.query("VACUUM ANALYZE")
        guard let session = try await SessionStore(client: client).create(userID: "bench-1", lifetime: 86_400) else {
            throw ValidationError("no session")
        }
        return session.token.text
    }

    private func edit(_ http: HTTPClient, port: Int, id: String, title: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/notifications/\(id)")
        request.method = .PATCH
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"variables":{"title":"\#(title)"}}"#))
        let response = try await http.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw ValidationError("PATCH \(id): \(response.status)") }
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
    }

    /// Minimum, median and maximum, in milliseconds.
    static func summary(_ durations: [Duration]) -> String {
        let sorted = durations.sorted()
        return
            "min \(milliseconds(sorted[0])) ms, median \(milliseconds(sorted[sorted.count / 2])) ms, max \(milliseconds(sorted[sorted.count - 1])) ms"
    }
}
