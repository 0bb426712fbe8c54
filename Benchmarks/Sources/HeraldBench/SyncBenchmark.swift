import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import Postgres

/// The `sync` case: incremental collection polls over HTTP — (a) quiet, no changes; (b) returning 10
/// changes — at several client counts, beside `pgbench` running the SQL statements the endpoint runs,
/// against the same database in the same run; then each kind paced at half its peak rate for latency.
struct SyncBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Incremental sync polls over HTTP versus pgbench running the same SQL."
    )

    @Option(help: "Users in the database.")
    var users: Int = 10_000

    @Option(help: "Notifications each user has in the channel.")
    var notifications: Int = 200

    @Option(help: "Users that poll (each with a session).")
    var pollers: Int = 1_000

    @Option(help: "Seconds per measurement.")
    var seconds: Int = 5

    @Option(help: "Comma-separated client counts.")
    var clients: String = "1,2,4,8"

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    @Option(help: "Pool connections that carry the pipelined session checks and polls (default: a quarter of the pool's 8).")
    var pipelineConnections: Int?

    @Option(help: "Load generator for the peak rates: wrk (C, like pgbench; the default when installed) or swift (AsyncHTTPClient in this process).")
    var generator: Generator = Wrk.path() == nil ? .swift : .wrk

    @Flag(help: "Herald's pool reaches the private cluster through PgBouncer in transaction mode (pgbench stays direct).")
    var pgbouncer = false

    @Flag(help: "Herald's pool runs every statement unnamed instead of preparing it (what an older PgBouncer needs).")
    var unprepared = false

    @Flag(
        name: .customLong("split-cpus"),
        help: "This process (Herald's server) on CPU 0 alone; PostgreSQL (a local server), wrk and pgbench on the other CPUs."
    )
    var splitCPUs = false

    enum Generator: String, ExpressibleByArgument {
        case wrk
        case swift
    }

    static let adminToken = "herald-bench-admin-token-0123456789"
    /// Every bench session token is `hex(user id).<this>`; pgbench computes the same hash in SQL.
    static let tokenSecretPart = String(repeating: "ab", count: 32)

    func run() async throws {
        let counts = clients.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }), notifications > 10, pollers <= users else {
            throw ValidationError("--clients must be positive, --notifications more than 10, --pollers at most --users")
        }
        let split = splitCPUs ? try CPUSplit() : nil
        try split?.pinSelf()
        let database = try await BenchDatabase.open(databaseURL: databaseURL, pgbouncer: pgbouncer, unprepared: unprepared)
        defer { database.close() }
        var http = HTTPClient.Configuration()
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        try await database.withFreshHeraldDatabase("herald_sync_bench", connections: 8, pipelineConnections: pipelineConnections, http: http) {
            client,
            http,
            conninfo,
            logger in
            let positions = try await seed(client)
            try await measure(client: client, http: http, conninfo: conninfo, positions: positions, counts: counts, split: split, logger: logger)
        }
    }

    /// The positions the two kinds of tokens hold: after everything (quiet), and before the last 10.
    struct Positions {
        var quiet: ChangePosition
        var tenBack: ChangePosition
    }

    func seed(_ client: PostgresClient) async throws -> Positions {
        print("Creating \(users) users × \(notifications) notifications (\(users * notifications) recipient rows)…")
        try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(users)) AS g")
        _ = try await ChannelStore(client: client).put(Channel(url: "news", kind: .feed, name: "News"))
        _ = try await TemplateStore(client: client).put(
            Template(
                key: "plain",
                name: "Plain",
                variables: [.init(name: "title", type: .string, required: true)],
                data: .object(["title": .string("{{title}}")])
            )
        )
        let xid = try await client.withTransaction { connection in
            let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint").first!.decode(Int64.self)
            try await connection.query(
                """
                INSERT INTO notifications (channel_key, template_key, template_version, data, audience, audience_size, recipient_count)
                SELECT 1, 'plain', 1, jsonb_build_object('title', 'Notification ' || g), 'targets', \(users), \(users)
                FROM generate_series(1, \(notifications)) AS g
                """
            )
            try await connection.query(
                """
                INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                SELECT u.key, 1, n.id, \(xid) FROM users u CROSS JOIN notifications n ORDER BY u.key, n.id
                """
            )
            try await connection.query(
                """
                INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id)
                SELECT key, 1, \(notifications), \(notifications) FROM users
                """
            )
            try await connection.query(
                """
                INSERT INTO sessions (user_id, token_hash, expires_at)
                SELECT id, sha256(convert_to(encode(convert_to(id, 'UTF8'), 'hex') || '.' || \(Self.tokenSecretPart), 'UTF8')), now() + interval '1 day'
                FROM users WHERE key <= \(pollers)
                """
            )
            return xid
        }
        try await client.query("VACUUM ANALYZE")
        return Positions(
            quiet: .through(xid: xid),
            tenBack: ChangePosition(xid: xid, notificationID: Int64(notifications - 10))
        )
    }

    struct Sample {
        var rate: Double
        var p50: Double
        var p99: Double
    }

    private func measure(
        client: PostgresClient,
        http: HTTPClient,
        conninfo: String,
        positions: Positions,
        counts: [Int],
        split: CPUSplit?,
        logger: Logger
    ) async throws {
        let key = try await SettingsStore(client: client).syncTokenKey()
        let pollers = self.pollers
        func requests(_ position: ChangePosition) -> [(token: String, session: String)] {
            (1...pollers).map { Self.pollRequest(user: $0, position: position, key: key) }
        }
        let quiet = requests(positions.quiet)
        let ten = requests(positions.tenBack)
        let quietScript = try script(name: "quiet", position: positions.quiet)
        let tenScript = try script(name: "ten", position: positions.tenBack)
        let quietPipelined = try script(name: "quiet-pipelined", position: positions.quiet, pipelined: true)
        let tenPipelined = try script(name: "ten-pipelined", position: positions.tenBack, pipelined: true)
        defer {
            for path in [quietScript, tenScript, quietPipelined, tenPipelined] { try? FileManager.default.removeItem(atPath: path) }
        }
        try await BenchServer.run(client: client, adminToken: Self.adminToken, logger: logger) { port in
            // The answers are what they should be before anything is timed.
            try await check(http: http, port: port, request: quiet[0], expected: 0)
            try await check(http: http, port: port, request: ten[0], expected: 10)
            print("")
            // pgbench in its default protocol (`-M simple`, what `pgbench -f` does), with prepared
            // statements (`-M prepared`), and with prepared statements sent in one round trip
            // (`\startpipeline`), as Herald's pool sends a poll and its session check.
            print(
                "| poll | clients | Herald (req/s) | p50 / p99 ms | pgbench prepared (tx/s) | avg ms | pgbench pipelined (tx/s) | pgbench simple (tx/s) "
                    + "| Herald ÷ prepared | Herald ÷ pipelined | Herald ÷ simple |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            var peaks: [String: Double] = [:]
            let meter = await CPUMeter.locate(client)
            if split != nil, meter.postmaster == nil {
                print("(--split-cpus: the database server is not on this machine; only this process and the load generators are pinned.)")
            }
            let prefix = split?.loadPrefix ?? []
            /// Backends opened since the last call (the pool's, a new pgbench's) join the database's CPUs.
            func pinDatabase() throws {
                guard let split, let postmaster = meter.postmaster else { return }
                try split.pinDatabase(postmaster: postmaster, children: CPUMeter.children(of: postmaster))
            }
            var cpu: [String] = []
            var cells: [BoundCell] = []
            // Taken before the last pgbench run: the next reading waits for that run's backends to end.
            var beforeLastPGBench: CPUMeter.Reading?
            func micro(_ value: Double?) -> String { value.map { format($0) } ?? "–" }
            for (name, list, path, pipelinedPath) in [("quiet", quiet, quietScript, quietPipelined), ("10 changes", ten, tenScript, tenPipelined)] {
                for count in counts {
                    try pinDatabase()
                    let beforeHerald = await meter.read(after: beforeLastPGBench)
                    let herald = try await peak(http: http, port: port, requests: list, clients: count, prefix: prefix)
                    let beforePGBench = await meter.read()
                    let pgbench = try PGBench.run(conninfo: conninfo, script: path, clients: count, seconds: seconds, prefix: prefix)
                    let afterPGBench = await meter.read(after: beforePGBench)
                    let served = CPUMeter.perRequest(from: beforeHerald, to: beforePGBench, requests: herald.rate * Double(seconds))
                    let reference = CPUMeter.perRequest(from: beforePGBench, to: afterPGBench, requests: pgbench.tps * Double(seconds))
                    cpu.append(
                        "| \(name) | \(count) | \(micro(served.herald)) | \(micro(served.postgres)) | \(micro(served.rest)) "
                            + "| \(micro(reference.postgres)) | \(micro(reference.herald + reference.rest)) |"
                    )
                    beforeLastPGBench = afterPGBench
                    cells.append(
                        BoundCell(poll: name, clients: count, herald: herald.rate, pgbench: pgbench.tps, pgbenchPostgres: reference.postgres)
                    )
                    let pipelined = try PGBench.run(conninfo: conninfo, script: pipelinedPath, clients: count, seconds: seconds, prefix: prefix)
                    let simple = try PGBench.run(conninfo: conninfo, script: path, clients: count, seconds: seconds, mode: "simple", prefix: prefix)
                    peaks[name] = max(peaks[name] ?? 0, herald.rate)
                    print(
                        "| \(name) | \(count) | \(format(herald.rate)) | \(format(herald.p50, digits: 2)) / \(format(herald.p99, digits: 2)) "
                            + "| \(format(pgbench.tps)) | \(format(pgbench.latencyAverage ?? 0, digits: 2)) | \(format(pipelined.tps)) | \(format(simple.tps)) "
                            + "| \(format(herald.rate / pgbench.tps * 100)) % | \(format(herald.rate / pipelined.tps * 100)) % "
                            + "| \(format(herald.rate / simple.tps * 100)) % |"
                    )
                }
            }
            print("")
            print("CPU per request or transaction, µs (from /proc, over each run above; PostgreSQL – when the server is not on this machine):")
            print("")
            print(
                "| poll | clients | Herald: server process | PostgreSQL | rest (wrk, other) | pgbench prepared: PostgreSQL | rest (pgbench, other) |"
            )
            print("|---|---:|---:|---:|---:|---:|---:|")
            cpu.forEach { print($0) }
            let beforeFloor = await meter.read(after: beforeLastPGBench)
            let floor = try await peak(http: http, port: port, requests: [("", "")], clients: 4, prefix: prefix)
            let floorCPU = CPUMeter.perRequest(from: beforeFloor, to: await meter.read(), requests: floor.rate * Double(seconds))
            print("")
            print(
                "Load generator: \(generator.rawValue). HTTP floor (same generator, `GET /healthz`, no database, 4 clients): \(format(floor.rate)) req/s, "
                    + "p50 / p99 \(format(floor.p50, digits: 2)) / \(format(floor.p99, digits: 2)) ms; "
                    + "CPU per request: server \(format(floorCPU.herald)) µs, rest \(format(floorCPU.rest)) µs."
            )
            if let split { print(split.description) }
            printBound(cells, floor: floorCPU, split: split)
            print("")
            print("| poll | paced at (req/s, half of peak) | clients | achieved (req/s) | p50 / p99 ms |")
            print("|---|---:|---:|---:|---:|")
            for (name, list) in [("quiet", quiet), ("10 changes", ten)] {
                let target = (peaks[name] ?? 0) / 2
                let paced = try await load(http: http, port: port, requests: list, clients: 4, seconds: seconds, pace: target / 4)
                print(
                    "| \(name) | \(format(target)) | 4 | \(format(paced.rate)) | \(format(paced.p50, digits: 2)) / \(format(paced.p99, digits: 2)) |"
                )
            }
        }
    }

    /// One cell of the peak table, as the CPU bound needs it: rates, and PostgreSQL's CPU per pgbench
    /// prepared transaction (`nil` when the server is not on this machine).
    struct BoundCell {
        var poll: String
        var clients: Int
        var herald: Double
        var pgbench: Double
        var pgbenchPostgres: Double?
    }

    /// What the CPUs leave for a poll at best: a server that spent no more per poll than the HTTP floor
    /// (`GET /healthz`: parsing, routing, the hand-offs, the response; nothing of its own, not even
    /// libpq), beside a PostgreSQL that worked no harder per poll than it does for pgbench. Only CPU
    /// time counts, so the bound is generous at one client, where waiting for each other decides.
    /// When the bound itself is near half of pgbench's rate, no code above the floor can reach the goal.
    private func printBound(_ cells: [BoundCell], floor: CPUMeter.PerRequest, split: CPUSplit?) {
        // Without PostgreSQL's CPU (a server elsewhere) there is nothing to bound.
        guard cells.allSatisfy({ $0.pgbenchPostgres != nil }) else { return }
        let online = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        print("")
        print(
            "CPU bound: the rate a server costing only the HTTP floor's \(format(floor.herald)) µs per request could reach, "
                + "load generator \(format(floor.rest)) µs, PostgreSQL as much per poll as for pgbench prepared"
                + (split == nil ? " (all on \(Int(online)) CPUs):" : " (server on its CPU, the rest on the others):")
        )
        print("")
        print("| poll | clients | bound (req/s) | bound ÷ prepared | Herald ÷ bound |")
        print("|---|---:|---:|---:|---:|")
        for cell in cells {
            guard let postgres = cell.pgbenchPostgres else { continue }
            let others = postgres + floor.rest
            let bound =
                split == nil
                ? online * 1e6 / (floor.herald + others)
                : min(1e6 / max(floor.herald, 1), (online - 1) * 1e6 / max(others, 1))
            print(
                "| \(cell.poll) | \(cell.clients) | \(format(bound)) | \(format(bound / cell.pgbench * 100)) % | \(format(cell.herald / bound * 100)) % |"
            )
        }
    }

    /// The statements one incremental poll runs (session check, then the poll with the channel lookup; the bounded
    /// gap count runs only after a full page, never in these polls), as a pgbench script with a random
    /// polling user. Keep in step with `CollectionStore.poll`. `pipelined` sends both in one round trip
    /// (pgbench's `\startpipeline`, which needs `-M prepared` or `extended`), as Herald does.
    private func script(name: String, position: ChangePosition, pipelined: Bool = false) throws -> String {
        let path = NSTemporaryDirectory() + "herald-bench-sync-\(name)-\(getpid()).sql"
        let (start, end) = pipelined ? ("\\startpipeline\n", "\\endpipeline\n") : ("", "")
        let text = """
            \\set k random(1, \(pollers))
            \(start)SELECT u.key FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.user_id = 'user-' || :k AND s.token_hash = sha256(convert_to(encode(convert_to('user-' || :k, 'UTF8'), 'hex') || '.' || '\(Self.tokenSecretPart)', 'UTF8')) AND s.expires_at > now();
            WITH snap AS MATERIALIZED (SELECT one.channel_key, c.kind, c.name, c.cover_url, c.custom_type, c.url, coalesce(s.unread_adjustment, 0) + (SELECT count(*) FROM notifications b WHERE b.audience = 'all' AND b.deleted_at IS NULL AND b.folded_through < b.fanout_through AND b.folded_through < one.user_key AND b.fanout_after >= one.user_key AND b.channel_key = one.channel_key) AS unread_count, s.last_read_at, s.last_seen_at, s.reset_count, ((SELECT coalesce(sum(unread_adjustment), 0) FROM channel_states WHERE user_key = one.user_key) + (SELECT count(*) FROM notifications b WHERE b.audience = 'all' AND b.deleted_at IS NULL AND b.folded_through < b.fanout_through AND b.folded_through < one.user_key AND b.fanout_after >= one.user_key))::bigint AS badge, pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon, pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid, coalesce((SELECT ('x' || encode(value, 'hex'))::bit(64)::bigint FROM herald_settings WHERE name = 'compacted_through'), 0) AS compacted FROM channels c CROSS JOIN LATERAL (SELECT :k::bigint AS user_key, c.key AS channel_key) AS one LEFT JOIN channel_states s ON s.user_key = one.user_key AND s.channel_key = one.channel_key WHERE c.url = 'news') SELECT snap.channel_key, snap.kind, snap.name, snap.cover_url, snap.custom_type, snap.url, snap.unread_count, snap.last_read_at, snap.last_seen_at, snap.reset_count, snap.badge, snap.horizon, snap.next_xid, snap.compacted, changed.* FROM snap LEFT JOIN LATERAL (SELECT r.change_xid, r.deleted, n.id, n.template_key, n.template_version, coalesce(r.data, n.data), n.category, n.tags, n.event_deadline, n.created_at, n.updated_at, r.status FROM notification_recipients r JOIN notifications n ON n.id = r.notification_id WHERE r.user_key = :k AND r.channel_key = snap.channel_key AND (r.change_xid, r.notification_id) > (\(position.xid), \(position.notificationID)) AND r.change_xid < snap.horizon AND (NULL::text IS NULL OR n.category = NULL) ORDER BY r.change_xid, r.notification_id LIMIT 31) AS changed ON true;
            \(end)
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func get(_ http: HTTPClient, port: Int, _ request: (token: String, session: String)) async throws -> ByteBuffer {
        var outgoing = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(Self.path(request.token))")
        outgoing.headers.add(name: "Authorization", value: "Bearer \(request.session)")
        let response = try await http.execute(outgoing, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw ValidationError("poll answered \(response.status): \(String(buffer: body))") }
        return body
    }

    func check(http: HTTPClient, port: Int, request: (token: String, session: String), expected: Int) async throws {
        let body = try await get(http, port: port, request)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        let count = (object?["notifications"] as? [Any])?.count
        guard object?["is_live"] as? Bool == true, count == expected else {
            throw ValidationError("expected a live answer with \(expected) changes, got: \(String(buffer: body))")
        }
    }

    /// The peak rate with `clients` connections, each sending as fast as answers come, with the chosen
    /// generator (`wrk` started behind `prefix`).
    private func peak(
        http: HTTPClient,
        port: Int,
        requests: [(token: String, session: String)],
        clients: Int,
        prefix: [String]
    ) async throws -> Sample {
        switch generator {
        case .swift:
            return try await load(http: http, port: port, requests: requests, clients: clients, seconds: seconds, pace: nil)
        case .wrk:
            let paths = requests.map { (path: Self.path($0.token), session: $0.session) }
            let result = try await Wrk.run(port: port, requests: paths, clients: clients, seconds: seconds, prefix: prefix)
            return Sample(rate: result.rate, p50: result.p50, p99: result.p99)
        }
    }

    /// An empty token stands for the floor: the same generator and server answering `GET /healthz`.
    /// The seeded user's poll from `position`: its sync token (percent-encoded for a query) and its
    /// session token.
    static func pollRequest(user: Int, position: ChangePosition, key: [UInt8]) -> (token: String, session: String) {
        let token = SyncToken(userKey: Int64(user), channelKey: 1, resetCount: 0, filter: .inbox, position: position)
        let session = Hex.encode(Array("user-\(user)".utf8)) + "." + tokenSecretPart
        return (token.encoded(key: key).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "", session)
    }

    static func path(_ token: String) -> String {
        token.isEmpty ? "/healthz" : "/v1/me/channels/news/collection?token=\(token)"
    }

    /// `clients` tasks polling for `seconds`, each as fast as it can, or at `pace` requests per second.
    func load(
        http: HTTPClient,
        port: Int,
        requests: [(token: String, session: String)],
        clients: Int,
        seconds: Int,
        pace: Double?
    ) async throws -> Sample {
        let clock = ContinuousClock()
        // Warm-up: open the connections and fill the caches before the clock starts.
        for index in 0..<min(50, requests.count) { _ = try await get(http, port: port, requests[index]) }
        let start = clock.now
        let deadline = start + .seconds(seconds)
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for task in 0..<clients {
                group.addTask {
                    var samples: [Double] = []
                    var index = task * 7919
                    var next = clock.now
                    while clock.now < deadline {
                        if let pace {
                            // Open-loop pacing: each request at its scheduled time, not after the last answer.
                            next = next + .nanoseconds(Int64(1e9 / pace))
                            if next > clock.now { try await Task.sleep(until: next, clock: clock) }
                        }
                        let began = clock.now
                        _ = try await get(http, port: port, requests[index % requests.count])
                        samples.append(elapsedSeconds(clock.now - began) * 1000)
                        index += 1
                    }
                    return samples
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = elapsedSeconds(clock.now - start)
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Sample(rate: Double(sorted.count) / elapsed, p50: percentile(0.5), p99: percentile(0.99))
    }
}
