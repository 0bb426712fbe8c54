import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import ServiceLifecycle
import Synchronization

/// The `retention` case: a channel with a retention that is sent to for ever. Broadcasts go out at a
/// steady pace through the HTTP API; the expiry and compaction services run as `herald serve` runs
/// them (at shorter intervals); some users poll their collection with their sync token. Every minute
/// it prints the tables' sizes (`pg_total_relation_size`: table, indexes and TOAST) and row counts,
/// and how many expiries the polls have seen: once the first notifications pass the retention, the
/// sizes should stop growing.
struct RetentionBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Steady sends to a channel with a retention: storage over time, and the expiries polls see."
    )

    @Option(help: "Users every broadcast reaches.")
    var users: Int = 1000

    @Option(help: "Seconds between broadcasts.")
    var sendInterval: Double = 5

    @Option(help: "The channel's retention, as the API takes it.")
    var retention: String = "1h"

    @Option(help: "HERALD_CHANGE_RETENTION: how long tombstones stay, in seconds.")
    var changeRetention: Int = 300

    @Option(help: "Seconds between expiry passes and between compaction passes.")
    var passInterval: Int = 60

    @Option(help: "Minutes to run.")
    var minutes: Double = 80

    @Option(help: "Users that poll (every 30 s).")
    var pollers: Int = 10

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        guard RetentionPeriod(retention) != nil else { throw ValidationError("--retention: \(RetentionPeriod.problem)") }
        guard users > 0, pollers > 0, pollers <= users, sendInterval > 0, minutes > 0, passInterval > 0 else {
            throw ValidationError("--users, --pollers (at most --users), --send-interval, --minutes and --pass-interval must be positive")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_retention_bench", connections: 4) { client, http, _, logger in
            let sessions = try await seed(client)
            let services: [any Service] = [
                ExpiryService(client: client, interval: .seconds(passInterval), logger: logger),
                CompactionService(client: client, retention: .seconds(changeRetention), interval: .seconds(passInterval), logger: logger),
            ]
            try await BenchServer.run(client: client, adminToken: Self.adminToken, services: services, logger: logger) { port in
                try await measure(client: client, http: http, port: port, sessions: sessions)
            }
        }
    }

    private func seed(_ client: PostgresClient) async throws -> [String] {
        try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(users)) AS g")
        try await client.query("VACUUM ANALYZE users")
        _ = try await ChannelStore(client: client).put(Channel(url: "news", kind: .feed, name: "News", retention: retention))
        _ = try await TemplateStore(client: client).put(
            Template(
                key: "news",
                name: "News",
                variables: [.init(name: "title", type: .string, required: true)],
                data: .object(["title": .string("{{title}}")])
            )
        )
        var sessions: [String] = []
        for user in 1...pollers {
            guard let session = try await SessionStore(client: client).create(userID: "user-\(user)", lifetime: 7 * 86_400) else {
                throw ValidationError("no user-\(user)")
            }
            sessions.append(session.token.text)
        }
        return sessions
    }

    /// The pollers' state: each one's sync token, and what their polls have seen.
    private struct Pollers {
        var tokens: [String?]
        var changed = 0
        var deleted = 0
        var polls = 0
    }

    private func measure(client: PostgresClient, http: HTTPClient, port: Int, sessions: [String]) async throws {
        emit("Channel retention \(retention), broadcasts to \(users) users every \(format(sendInterval, digits: 1)) s, tombstones kept")
        emit("\(changeRetention) s (HERALD_CHANGE_RETENTION), expiry and compaction every \(passInterval) s, \(pollers) users polling every 30 s.")
        emit("Sizes are pg_total_relation_size (table + indexes + TOAST), in MB.")
        emit("")
        emit(
            "| minute | sent | notifications rows | live copies | tombstones | recipients MB | of which heap | notifications MB | channel_states MB | database MB | expiries seen by polls |"
        )
        emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        let start = ContinuousClock.now
        let end = start + .seconds(minutes * 60)
        try await withThrowingTaskGroup(of: Void.self) { group in
            let sent = Counter()
            let seen = Counter()
            group.addTask {
                var next = start
                while ContinuousClock.now < end {
                    try await send(http: http, port: port, title: "n\(sent.value)")
                    sent.add(1)
                    next += .milliseconds(Int(sendInterval * 1000))
                    try await Task.sleep(until: next)
                }
            }
            group.addTask {
                var state = Pollers(tokens: Array(repeating: nil, count: sessions.count))
                var next = start
                while ContinuousClock.now < end {
                    for (index, session) in sessions.enumerated() {
                        let (token, deleted) = try await poll(http: http, port: port, session: session, token: state.tokens[index])
                        state.tokens[index] = token
                        state.deleted += deleted
                        seen.add(deleted)
                    }
                    next += .seconds(30)
                    try await Task.sleep(until: next)
                }
            }
            group.addTask {
                var minute = 0
                while ContinuousClock.now < end {
                    // A run shorter than its next minute ends with the row of its last moment.
                    try await Task.sleep(until: min(start + .seconds(minute * 60), end))
                    let row = try await client.query(
                        """
                        SELECT (SELECT count(*) FROM notifications),
                            (SELECT count(*) FROM notification_recipients WHERE NOT deleted),
                            (SELECT count(*) FROM notification_recipients WHERE deleted),
                            pg_total_relation_size('notification_recipients'), pg_relation_size('notification_recipients'),
                            pg_total_relation_size('notifications'), pg_total_relation_size('channel_states'),
                            pg_database_size(current_database())
                        """
                    )[0].decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64).self)
                    let mb = { (bytes: Int64) in format(Double(bytes) / 1_048_576, digits: 1) }
                    emit(
                        "| \(minute) | \(sent.value) | \(row.0) | \(row.1) | \(row.2) | \(mb(row.3)) | \(mb(row.4)) | \(mb(row.5)) | \(mb(row.6)) | \(mb(row.7)) | \(seen.value) |"
                    )
                    minute += 1
                }
            }
            try await group.waitForAll()
        }
    }

    private func send(http: HTTPClient, port: Int, title: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/notifications")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"channel_url":"news","template_key":"news","audience":"all","variables":{"title":"\#(title)"}}"#))
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == 202 else { throw ValidationError("send failed: \(response.status) \(String(buffer: body))") }
    }

    /// One poll, following `has_more`; the next token and how many deletions it reported.
    private func poll(http: HTTPClient, port: Int, session: String, token: String?) async throws -> (String?, Int) {
        var token = token
        var deleted = 0
        while true {
            let query = token.map { "?token=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/me/channels/news/collection\(query)")
            request.headers.add(name: "Authorization", value: "Bearer \(session)")
            let response = try await http.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 16 << 20)
            guard response.status.code == 200, let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else { throw ValidationError("poll failed: \(response.status) \(String(buffer: body).prefix(300))") }
            if token != nil { deleted += (object["deleted"] as? [Any])?.count ?? 0 }
            if object["is_live"] as? Bool == false {
                // Compacted past the token: start again from a fresh load.
                token = nil
                continue
            }
            token = object["next_token"] as? String
            if object["has_more"] as? Bool != true { return (token, deleted) }
        }
    }
}

/// Writes a line to standard output at once, even when it is a file: a long run is followed as it goes.
private func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A count shared between the benchmark's tasks.
private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add(_ amount: Int) { count.withLock { $0 += amount } }
}
