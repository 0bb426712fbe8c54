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
import Prometheus
import ServiceLifecycle

/// The `fanout` case: one notification to every user (`audience: "all"`) through Herald's HTTP API and
/// fan-out service, timed from the request until the last batch committed, beside the same send to a
/// topic every user subscribes to and a raw `COPY` of the same recipient rows into a table of the same
/// shape, in the same run. Also: every user subscribed to a topic in one request.
struct FanoutBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "One notification to N users versus a raw COPY of the same recipient rows."
    )

    @Option(help: "Users to create and reach.")
    var users: Int = 100_000

    @Option(help: "Comma-separated fan-out batch sizes (users per transaction) to measure.")
    var batchSizes: String = "10000,25000,100000"

    @Option(help: "Measurements per batch size.")
    var runs: Int = 3

    @Option(help: "Also time a send to this many listed targets (one transaction); 0 skips it.")
    var targets: Int = 10_000

    @Flag(inversion: .prefixedNo, help: "Also send to a topic every user subscribes to, beside each send to all.")
    var topic = true

    @Flag(
        help: "Also send a translated template to everyone (two thirds of the users have a locale it has a variant for), paired with the plain send."
    )
    var translated = false

    @Flag(
        help: "Also fold a batched send to everyone into the digests an earlier one opened, paired with a plain send to everyone."
    )
    var batched = false

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    func run() async throws {
        let sizes = batchSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }), users > 0, runs > 0 else {
            throw ValidationError("--users, --runs and every --batch-sizes entry must be positive")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_fanout_bench", connections: 4) { client, http, _, logger in
            try await seed(client)
            try await measure(client: client, http: http, sizes: sizes, logger: logger)
        }
    }

    private func measure(client: PostgresClient, http: HTTPClient, sizes: [Int], logger: Logger) async throws {
        let copyRows = try await copyData(client)

        print("Users: \(users). Each fan-out row: one INSERT … SELECT per batch through Herald; each COPY row: the same")
        print("(user_key, channel_key, notification_id, change_xid) as text through COPY FROM STDIN into a table")
        print("created `LIKE notification_recipients INCLUDING ALL` (same columns, defaults, primary key and indexes).")
        print("Both tables are truncated and a CHECKPOINT taken before each measurement. The topic send goes to")
        print("`bench-1`, which every user follows; users and subscriptions are vacuumed and analyzed first. After the fan-out, the")
        print("service folds the broadcast into the users' counters in the background (same batch size); that is")
        print("timed from the fan-out's end and waited for before the next measurement.")
        print("")
        if topic {
            try await withServer(client: client, batchSize: sizes[0], logger: logger) { port in
                print("| subscribers added in one request | run | request to commit (ms) | rows/s |")
                print("|---:|---:|---:|---:|")
                for run in 1...runs {
                    let elapsed = try await measureSubscribing(http: http, port: port, topic: "bench-\(run)")
                    print("| \(users) | \(run) | \(format(elapsed * 1000)) | \(format(Double(users) / elapsed)) |")
                }
                // As the users were after they were made: vacuumed and analyzed, so that both sends
                // read their source the same way (autovacuum would, some time after the inserts).
                try await client.query("VACUUM ANALYZE topic_subscriptions")
                print("")
            }
        }
        print(
            "| batch size | run | fan-out (ms) | fan-out rows/s | COPY (ms) | COPY rows/s | fan-out ÷ COPY rate | then folded (ms) | topic fan-out (ms) | topic ÷ all | topic folded (ms) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in sizes {
            try await withServer(client: client, batchSize: size, logger: logger) { port in
                for run in 1...runs {
                    // Paired, in alternating order, so that neither always runs on the other's warm cache.
                    let topicFirst = topic && run % 2 == 0
                    var topicTimes: (fanout: Double, fold: Double)?
                    if topicFirst { topicTimes = try await measureFanout(client: client, http: http, port: port, audience: #""topic":"bench-1""#) }
                    let (fanout, fold) = try await measureFanout(client: client, http: http, port: port, audience: #""audience":"all""#)
                    if topic, !topicFirst {
                        topicTimes = try await measureFanout(client: client, http: http, port: port, audience: #""topic":"bench-1""#)
                    }
                    let topicColumns =
                        topicTimes.map { "| \(format($0.fanout * 1000)) | \(format($0.fanout / fanout, digits: 2)) | \(format($0.fold * 1000)) |" }
                        ?? "| — | — | — |"
                    let copy = try await measureCopy(client: client, rows: copyRows)
                    print(
                        "| \(size) | \(run) | \(format(fanout * 1000)) | \(format(Double(users) / fanout)) "
                            + "| \(format(copy * 1000)) | \(format(Double(users) / copy)) | \(format(copy / fanout * 100)) % | \(format(fold * 1000)) "
                            + topicColumns
                    )
                }
            }
        }
        if translated {
            try await withServer(client: client, batchSize: sizes[0], logger: logger) { port in
                print("")
                print("| batch size | run | send to all (ms) | translated send to all (ms) | translated ÷ plain |")
                print("|---:|---:|---:|---:|---:|")
                for run in 1...runs {
                    // Paired, in alternating order.
                    var times: [String: Double] = [:]
                    for key in run % 2 == 0 ? ["news.translated", "news.digest"] : ["news.digest", "news.translated"] {
                        times[key] = try await measureFanout(client: client, http: http, port: port, audience: #""audience":"all""#, template: key)
                            .fanout
                    }
                    let (plain, localized) = (times["news.digest"]!, times["news.translated"]!)
                    print(
                        "| \(sizes[0]) | \(run) | \(format(plain * 1000)) | \(format(localized * 1000)) | \(format(localized / plain, digits: 2)) |"
                    )
                }
            }
        }
        if batched {
            try await withServer(client: client, batchSize: sizes[0], logger: logger) { port in
                print("")
                print("| batch size | run | opening send (ms) | send to all (ms) | folding send to all (ms) | folding ÷ plain |")
                print("|---:|---:|---:|---:|---:|---:|")
                for run in 1...runs {
                    let (opening, plain, folding) = try await measureFolding(client: client, http: http, port: port, run: run)
                    print(
                        "| \(sizes[0]) | \(run) | \(format(opening * 1000)) | \(format(plain * 1000)) | \(format(folding * 1000)) | \(format(folding / plain, digits: 2)) |"
                    )
                }
            }
        }
        if targets > 0 {
            try await withServer(client: client, batchSize: sizes[0], logger: logger) { port in
                print("")
                print("| listed targets | run | request to commit (ms) | rows/s |")
                print("|---:|---:|---:|---:|")
                for run in 1...runs {
                    let elapsed = try await measureTargets(client: client, http: http, port: port)
                    print("| \(min(targets, users)) | \(run) | \(format(elapsed * 1000)) | \(format(Double(min(targets, users)) / elapsed)) |")
                }
            }
        }
    }

    static let adminToken = "herald-bench-admin-token-0123456789"

    private func seed(_ client: PostgresClient) async throws {
        try await client.query("INSERT INTO users (id) SELECT 'user-' || g FROM generate_series(1, \(users)) AS g")
        if translated {
            try await client.query("UPDATE users SET locale = CASE key % 3 WHEN 0 THEN 'de-DE' WHEN 1 THEN 'pt-BR' END")
        }
        try await client.query("VACUUM ANALYZE users")
        _ = try await ChannelStore(client: client).put(Channel(url: "news", kind: .feed, name: "News"))
        let template = Template(
            key: "news.digest",
            name: "Digest",
            variables: [.init(name: "headline", type: .string, required: true), .init(name: "url", type: .url)],
            data: .object(["title": .string("{{headline}}"), "link": .string("{{url}}")]),
            pushTitle: "News",
            pushBody: "{{headline}}"
        )
        _ = try await TemplateStore(client: client).put(template)
        var localized = template
        localized.key = "news.translated"
        localized.variants = [
            "de": .init(data: .object(["title": .string("Neu: {{headline}}"), "link": .string("{{url}}")]), pushTitle: "Neuigkeiten"),
            "pt": .init(data: .object(["title": .string("Novo: {{headline}}"), "link": .string("{{url}}")]), pushTitle: "Novidades"),
        ]
        _ = try await TemplateStore(client: client).put(localized)
        try await client.query("CREATE TABLE bench_copy_recipients (LIKE notification_recipients INCLUDING ALL)")
    }

    /// The COPY input: one line per user, the row a fan-out inserts for them.
    private func copyData(_ client: PostgresClient) async throws -> [UInt8] {
        let channel = try await client.query("SELECT key FROM channels WHERE url = 'news'").first!.decode(Int64.self)
        var text = ""
        text.reserveCapacity(users * 32)
        for key in 1...users { text += "\(key)\t\(channel)\t1\t1000\n" }
        return Array(text.utf8)
    }

    private func withServer(
        client: PostgresClient,
        batchSize: Int,
        logger: Logger,
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws {
        try await BenchServer.run(client: client, adminToken: Self.adminToken, fanoutBatchSize: batchSize, logger: logger, body)
    }

    /// Seconds for `PUT /v1/topics/{topic}` and then every user subscribed in one request, which
    /// commits before the response.
    private func measureSubscribing(http: HTTPClient, port: Int, topic: String) async throws -> Double {
        var put = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/topics/\(topic)")
        put.method = .PUT
        put.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        let created = try await http.execute(put, timeout: .seconds(30))
        guard created.status == .created else { throw ValidationError("PUT /v1/topics/\(topic) answered \(created.status)") }
        let ids = (1...users).map { "\"user-\($0)\"" }.joined(separator: ",")
        let clock = ContinuousClock()
        let start = clock.now
        let (status, object) = try await request(
            http,
            .POST,
            "http://127.0.0.1:\(port)/v1/topics/\(topic)/subscribers",
            body: #"{"user_ids":[\#(ids)]}"#
        )
        let elapsed = clock.now - start
        guard status == 200, object?["added"] as? Int == users else { throw ValidationError("subscribing answered \(status) \(object ?? [:])") }
        return elapsedSeconds(elapsed)
    }

    private func request(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, body: String) async throws -> (status: Int, object: [String: Any]?)
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any])
    }

    private func post(_ http: HTTPClient, port: Int, body: String) async throws -> (status: Int, id: Int64) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/notifications")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any]
        guard let id = (object?["id"] as? String).flatMap({ Int64($0) }) else {
            throw ValidationError("send failed: \(response.status) \(String(buffer: bytes))")
        }
        return (Int(response.status.code), id)
    }

    private func prepare(_ client: PostgresClient) async throws {
        try await client.query("TRUNCATE notification_recipients, bench_copy_recipients")
        try await client.query("CHECKPOINT")
    }

    /// Seconds from sending the request until the fan-out's last batch committed, and from then until
    /// the last folding batch committed.
    private func measureFanout(
        client: PostgresClient,
        http: HTTPClient,
        port: Int,
        audience: String,
        template: String = "news.digest"
    ) async throws -> (fanout: Double, fold: Double) {
        try await prepare(client)
        let clock = ContinuousClock()
        let start = clock.now
        let sent = try await post(
            http,
            port: port,
            body:
                #"{"channel_url":"news","template_key":"\#(template)",\#(audience),"variables":{"headline":"Herald 1.0 is out","url":"https://example.com/herald"}}"#
        )
        // The batches commit one by one; the last one marks the notification done. Polling every
        // millisecond costs a small, cheap indexed read, well under the resolution reported.
        while try await client.query("SELECT fanout_state = 'done' FROM notifications WHERE id = \(sent.id)").first!.decode(Bool.self) == false {
            try await Task.sleep(for: .milliseconds(1))
        }
        let done = clock.now
        while try await client.query("SELECT folded_through >= fanout_through FROM notifications WHERE id = \(sent.id)").first!.decode(Bool.self)
            == false
        {
            try await Task.sleep(for: .milliseconds(1))
        }
        let folded = clock.now
        let reached = try await client.query("SELECT count(*) FROM notification_recipients WHERE notification_id = \(sent.id)").first!.decode(
            Int.self
        )
        guard sent.status == 202, reached == users else {
            throw ValidationError("the fan-out reached \(reached) of \(users) users (status \(sent.status))")
        }
        return (elapsedSeconds(done - start), elapsedSeconds(folded - done))
    }

    /// Seconds from the request until the fan-out of the send with `body` committed its last batch;
    /// then waits (untimed) until the broadcast is folded into the users' counters.
    private func timedSend(client: PostgresClient, http: HTTPClient, port: Int, body: String) async throws -> (seconds: Double, id: Int64) {
        let clock = ContinuousClock()
        let start = clock.now
        let sent = try await post(http, port: port, body: body)
        while try await client.query("SELECT fanout_state = 'done' FROM notifications WHERE id = \(sent.id)").first!.decode(Bool.self) == false {
            try await Task.sleep(for: .milliseconds(1))
        }
        let elapsed = elapsedSeconds(clock.now - start)
        while try await client.query("SELECT folded_through >= fanout_through FROM notifications WHERE id = \(sent.id)").first!.decode(Bool.self)
            == false
        {
            try await Task.sleep(for: .milliseconds(1))
        }
        return (elapsed, sent.id)
    }

    /// A batched send to everyone opens a digest per user; then, in alternating order, a plain send
    /// to everyone and a batched send with the same key, which folds into every digest. Seconds of
    /// each, request to last batch.
    private func measureFolding(client: PostgresClient, http: HTTPClient, port: Int, run: Int) async throws -> (Double, Double, Double) {
        try await prepare(client)
        func body(_ headline: String, batched: Bool) -> String {
            let batch = batched ? #","batch":{"key":"bench:\#(run)","window":"1h"}"# : ""
            return #"{"channel_url":"news","template_key":"news.digest","audience":"all","variables":{"headline":"\#(headline)"}\#(batch)}"#
        }
        let opening = try await timedSend(client: client, http: http, port: port, body: body("Alice liked your photo", batched: true))
        var plain = 0.0
        var folding = (seconds: 0.0, id: Int64(0))
        for step in run % 2 == 0 ? ["fold", "plain"] : ["plain", "fold"] {
            if step == "plain" {
                plain = try await timedSend(client: client, http: http, port: port, body: body("Breaking news", batched: false)).seconds
            } else {
                folding = try await timedSend(client: client, http: http, port: port, body: body("Bob liked your photo", batched: true))
            }
        }
        let (folded, reached) = try await client.query("SELECT batch_folded, recipient_count FROM notifications WHERE id = \(folding.id)")[0].decode(
            (Int64, Int64).self
        )
        guard folded == users, reached == 0 else { throw ValidationError("the batched send folded \(folded) and reached \(reached) of \(users)") }
        return (opening.seconds, plain, folding.seconds)
    }

    /// Seconds for a raw COPY of the same rows into a table of the same shape.
    private func measureCopy(client: PostgresClient, rows: [UInt8]) async throws -> Double {
        try await prepare(client)
        let clock = ContinuousClock()
        let start = clock.now
        let copied = try await client.withConnection { connection in
            try await connection.copyFrom(
                "COPY bench_copy_recipients (user_key, channel_key, notification_id, change_xid) FROM STDIN",
                data: rows
            )
        }
        let elapsed = clock.now - start
        guard copied == users else { throw ValidationError("COPY wrote \(copied) of \(users) rows") }
        return elapsedSeconds(elapsed)
    }

    /// Seconds for a send to `targets` listed users, which commits before the response.
    private func measureTargets(client: PostgresClient, http: HTTPClient, port: Int) async throws -> Double {
        try await prepare(client)
        let count = min(targets, users)
        let ids = (1...count).map { "\"user-\($0)\"" }.joined(separator: ",")
        let body = #"{"channel_url":"news","template_key":"news.digest","targets":[\#(ids)],"variables":{"headline":"Targeted"}}"#
        let clock = ContinuousClock()
        let start = clock.now
        let sent = try await post(http, port: port, body: body)
        let elapsed = clock.now - start
        guard sent.status == 201 else { throw ValidationError("the targeted send answered \(sent.status)") }
        return elapsedSeconds(elapsed)
    }
}
