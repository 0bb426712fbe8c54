import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres

#if canImport(Glibc)
import Glibc
#endif

/// The `curves` case: how costs grow with the data. (1) One user per size with that many
/// notifications in one channel: a first load, an older page, a quiet poll and the unread count,
/// each timed and its CPU measured; (2) one send to every user of databases of growing size: the
/// fan-out's time and the bytes a copy takes. Tables on stdout, rows in a CSV for
/// `scripts/plot-curves.py`.
struct CurvesBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "curves",
        abstract: "Request costs against notifications per user, fan-out time and storage against the audience."
    )

    @Option(help: "Notifications of the users of curve (1), comma-separated; empty skips it.")
    var perUser = "100,1000,10000,100000,1000000"

    @Option(help: "Users of the sends of curve (2), comma-separated; empty skips it.")
    var audiences = "1000,10000,100000,1000000"

    @Option(help: "Copies in the whole table for curve (3), comma-separated, ascending; empty skips it.")
    var tableCopies = "1000000,5000000,10000000,25000000,50000000"

    @Option(help: "Channels of the users of curve (4), comma-separated; empty skips it.")
    var channels = "1,10,100,1000"

    @Option(help: "Requests of each kind per user in (1), (3) and (4).")
    var requests = 2_000

    @Option(help: "Where the CSV goes.")
    var csv = "curves.csv"

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"
    static let page = 50
    /// One client asking as fast as it can is what is measured, not a flood.
    static let unlimited = ["HERALD_RATE_LIMIT_SESSION": "off", "HERALD_RATE_LIMIT_ADDRESS": "off"]

    func run() async throws {
        var rows = ["curve,size,request,p50_ms,p99_ms,herald_us,postgres_us,seconds,bytes_per_copy"]
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        let sizes = perUser.split(separator: ",").compactMap { Int($0) }
        if !sizes.isEmpty { rows += try await perUserCurve(database, sizes: sizes) }
        let audiences = audiences.split(separator: ",").compactMap { Int($0) }
        if !audiences.isEmpty { rows += try await audienceCurve(database, audiences: audiences) }
        let copies = tableCopies.split(separator: ",").compactMap { Int($0) }
        if !copies.isEmpty { rows += try await tableCurve(database, copies: copies) }
        let channelCounts = channels.split(separator: ",").compactMap { Int($0) }
        if !channelCounts.isEmpty { rows += try await channelsCurve(database, counts: channelCounts) }
        try (rows.joined(separator: "\n") + "\n").write(toFile: csv, atomically: true, encoding: .utf8)
        print("Rows written to \(csv).")
    }

    // MARK: - (1) notifications per user

    private func perUserCurve(_ database: BenchDatabase, sizes: [Int]) async throws -> [String] {
        var rows: [String] = []
        try await database.withFreshHeraldDatabase("herald_curves_bench", connections: 2) { client, http, conninfo, _ in
            print("Creating one user per size (\(sizes.map(String.init).joined(separator: ", ")) notifications)…")
            try await BenchSeed.feedAndPlainTemplate(client)
            var sessions: [Int: String] = [:]
            for size in sizes {
                sessions[size] = try await Self.seedUser(client, "user-\(size)", notifications: size)
            }
            try await client.query("VACUUM ANALYZE")
            try await client.query("CHECKPOINT")
            let title = "(1) one user's requests against the notifications they have, \(requests) of each, one at a time:"
            try await withServer(client, conninfo: conninfo, title: title, sizes: "notifications") { server, meter in
                for size in sizes {
                    guard let session = sessions[size] else { throw ValidationError("no session for the user of \(size)") }
                    rows += try await measureFeed(http, port: server.port, session: session, meter: meter, curve: "per_user", size: size)
                }
            }
        }
        return rows
    }

    /// `herald serve` on the database, with a CPU meter that knows its process, for `body`; prints the
    /// title and the head of the table of requests (`sizes` names the first column).
    func withServer(
        _ client: PostgresClient,
        conninfo: String,
        title: String,
        sizes: String,
        _ body: (ServeProcess, CPUMeter) async throws -> Void
    ) async throws {
        let server = try await ServeProcess.start(conninfo: conninfo, adminToken: Self.adminToken, environment: Self.unlimited)
        defer { server.process.signal(SIGKILL) }
        var meter = await CPUMeter.locate(client)
        meter.herald = server.process.pid
        print("")
        print(title)
        print("| \(sizes) | request | p50 ms | p99 ms | Herald µs | PostgreSQL µs |")
        print("|---:|---|---:|---:|---:|---:|")
        try await body(server, meter)
    }

    /// A user with `notifications` in `feed` (made in one transaction, all unread); returns a session.
    static func seedUser(_ client: PostgresClient, _ user: String, notifications size: Int) async throws -> String {
        try await client.withTransaction { connection in
            let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint")[0].decode(Int64.self)
            let key = try await connection.query("INSERT INTO users (id) VALUES (\(user)) RETURNING key")[0].decode(Int64.self)
            try await connection.query(
                """
                WITH sent AS (\(BenchSeed.notificationsInsert(count: size)) RETURNING id)
                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                SELECT \(key), 1, id, \(xid) FROM sent
                """
            )
            try await connection.query(
                """
                INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id)
                SELECT \(key), 1, \(size), max(notification_id) FROM notification_recipients WHERE user_key = \(key)
                """
            )
        }
        guard let session = try await SessionStore(client: client).create(userID: user, lifetime: 86_400)?.token.text else {
            throw ValidationError("no session for \(user)")
        }
        return session
    }

    /// A user's first load, older page, quiet poll and unread count in `feed`, measured and printed as
    /// table rows; returns the CSV rows.
    func measureFeed(_ http: HTTPClient, port: Int, session: String, meter: CPUMeter, curve: String, size: Int) async throws -> [String] {
        let base = "http://127.0.0.1:\(port)/v1/me"
        let first = try await Self.get(http, base + "/channels/feed/collection?limit=\(Self.page)", session: session)
        guard let token = first["next_token"] as? String, let cursor = first["prev_cursor"] as? String else {
            throw ValidationError("the first load named no next_token or prev_cursor")
        }
        return try await measureKinds(
            http,
            base: base,
            session: session,
            meter: meter,
            curve: curve,
            size: size,
            kinds: [
                ("first load", "/channels/feed/collection?limit=\(Self.page)"),
                ("older page", "/channels/feed/notifications?before=\(cursor)&limit=\(Self.page)"),
                ("quiet poll", "/channels/feed/collection?token=\(token)"),
                ("unread", "/unread"),
            ]
        )
    }

    /// Each of `kinds` (a name and a path under `base`) measured, printed as a table row; the CSV rows.
    func measureKinds(
        _ http: HTTPClient,
        base: String,
        session: String,
        meter: CPUMeter,
        curve: String,
        size: Int,
        kinds: [(String, String)]
    ) async throws -> [String] {
        var rows: [String] = []
        for (kind, path) in kinds {
            let measured = try await measure(http, url: base + path, session: session, meter: meter)
            print(
                "| \(size) | \(kind) | \(format(measured.p50, digits: 2)) | \(format(measured.p99, digits: 2)) "
                    + "| \(format(measured.herald)) | \(format(measured.postgres)) |"
            )
            rows.append("\(curve),\(size),\(kind),\(measured.p50),\(measured.p99),\(measured.herald),\(measured.postgres),,")
        }
        return rows
    }

    /// `requests` GETs one after the other: the median and 99th percentile of their latency, and the
    /// CPU per request of Herald's process and of PostgreSQL.
    private func measure(
        _ http: HTTPClient,
        url: String,
        session: String,
        meter: CPUMeter
    ) async throws -> (p50: Double, p99: Double, herald: Double, postgres: Double) {
        for _ in 0..<10 { _ = try await Self.get(http, url, session: session) }  // warm the connection and the plans
        let clock = ContinuousClock()
        var latencies: [Double] = []
        latencies.reserveCapacity(requests)
        let before = await meter.read()
        for _ in 0..<requests {
            let start = clock.now
            _ = try await Self.get(http, url, session: session)
            latencies.append(elapsedSeconds(clock.now - start) * 1000)
        }
        let after = await meter.read(after: before)
        let cpu = CPUMeter.perRequest(from: before, to: after, requests: Double(requests))
        latencies.sort()
        let p99 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))]
        return (latencies[latencies.count / 2], p99, cpu.herald, cpu.postgres ?? 0)
    }

    static func get(_ http: HTTPClient, _ url: String, session: String) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(session)")
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 64 << 20)
        guard response.status == .ok else { throw ValidationError("GET \(url) answered \(response.status.code): \(String(buffer: body))") }
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }

    // MARK: - (2) the audience

    private func audienceCurve(_ database: BenchDatabase, audiences: [Int]) async throws -> [String] {
        var rows: [String] = []
        print("")
        print("(2) one send to every user (`audience: \"all\"`), a fresh database for each audience:")
        print("| users | fan-out s | copies/s | bytes per copy: recipients table | its indexes |")
        print("|---:|---:|---:|---:|---:|")
        for users in audiences {
            try await database.withFreshHeraldDatabase("herald_curves_bench", connections: 2) { client, http, conninfo, _ in
                try await BenchSeed.feedAndPlainTemplate(client)
                try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(users)) AS g")
                try await client.query("VACUUM ANALYZE")
                try await client.query("CHECKPOINT")
                let server = try await ServeProcess.start(conninfo: conninfo, adminToken: Self.adminToken, environment: Self.unlimited)
                defer { server.process.signal(SIGKILL) }
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/v1/notifications")
                request.method = .POST
                request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(
                    ByteBuffer(string: #"{"channel_url":"feed","template_key":"plain","audience":"all","variables":{"title":"Herald 2.0 is out"}}"#)
                )
                let clock = ContinuousClock()
                let start = clock.now
                let response = try await http.execute(request, timeout: .seconds(60))
                let body = try await response.body.collect(upTo: 1 << 20)
                guard (200..<300).contains(Int(response.status.code)),
                    let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                    let id = (object["id"] as? String).flatMap({ Int64($0) })
                else { throw ValidationError("the send answered \(response.status.code): \(String(buffer: body))") }
                // One row's read every 5 ms, well under the resolution reported.
                while try await client.query("SELECT fanout_state = 'done' FROM notifications WHERE id = \(id)")[0].decode(Bool.self) == false {
                    try await Task.sleep(for: .milliseconds(5))
                }
                let seconds = elapsedSeconds(clock.now - start)
                try await client.query("VACUUM ANALYZE notification_recipients")
                let (table, indexes, copies) = try await client.query(
                    """
                    SELECT pg_table_size('notification_recipients'), pg_indexes_size('notification_recipients'),
                        (SELECT count(*) FROM notification_recipients)
                    """
                )[0].decode((Int64, Int64, Int64).self)
                guard copies == users else { throw ValidationError("\(copies) copies for \(users) users") }
                let perCopy = { (bytes: Int64) in Double(bytes) / Double(copies) }
                print(
                    "| \(users) | \(format(seconds, digits: 2)) | \(format(Double(users) / seconds)) | \(format(perCopy(table))) "
                        + "| \(format(perCopy(indexes))) |"
                )
                rows.append("audience,\(users),fan-out,,,,,\(seconds),\(perCopy(table + indexes))")
            }
        }
        return rows
    }
}
