import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldStore
import HeraldTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres

/// The `webhooks` case: how fast the outbox drains to a local receiver, by batch size; and what a
/// webhook costs the requests that write events — delivery receipts and read marks — measured with and
/// without a webhook that wants their events, in the same run.
struct WebhookBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Webhook events per second to a local receiver, and what webhooks cost a receipt and a read."
    )

    @Option(help: "Events queued per throughput measurement.")
    var events: Int = 20_000

    @Option(help: "Comma-separated batch sizes (events per request) to measure.")
    var batchSizes: String = "1,50,500"

    @Option(help: "Requests per cost measurement (each a receipt, or a read, of one notification).")
    var requests: Int = 2000

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"
    static let secret = "bench-secret-0123456789abcdef"

    func run() async throws {
        let sizes = batchSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ (1...500).contains($0) }), events > 0, requests > 0 else {
            throw ValidationError("--events and --requests must be positive, every --batch-sizes entry 1–500")
        }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        let box = try SecretBox(key: SecureRandom.bytes(32))
        try await database.withFreshHeraldDatabase("herald_webhook_bench", connections: 4) { client, http, _, logger in
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.shutdown() } }
            try await throughput(client: client, box: box, receiver: receiver, sizes: sizes, logger: logger)
            try await cost(client: client, box: box, http: http, receiver: receiver, logger: logger)
        }
    }

    private func throughput(client: PostgresClient, box: SecretBox, receiver: WebhookReceiver, sizes: [Int], logger: Logger) async throws {
        let store = WebhookStore(client: client, box: box)
        print("Throughput: \(events) events queued in the outbox, then one dispatcher (at most 2 requests in flight to")
        print("one webhook) posts them to a local receiver (HTTP/1 on loopback, answering 200 at once), timed until the")
        print("outbox is empty.")
        print("")
        print("| batch size | requests | seconds | events/s |")
        print("|---:|---:|---:|---:|")
        for size in sizes {
            _ = try await store.put(name: "bench", url: receiver.url, events: [.notificationClicked], secret: Self.secret, batchSize: size)
            try await client.query(
                "SELECT herald_webhook_event('notification.clicked', jsonb_build_object('notification_id', g::text, 'user_id', 'user-' || g)) FROM generate_series(1, \(events)) AS g"
            )
            let before = receiver.requests.count
            var settings = WebhookSettings()
            settings.pollInterval = .milliseconds(10)
            let dispatcher = WebhookDispatcher(client: client, box: box, settings: settings, listener: nil, logger: logger)
            let start = ContinuousClock.now
            let task = Task { try await dispatcher.run() }
            while try await client.query("SELECT count(*) FROM webhook_events")[0].decode(Int.self) > 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = elapsedSeconds(ContinuousClock.now - start)
            task.cancel()
            _ = try? await task.value
            print("| \(size) | \(receiver.requests.count - before) | \(format(elapsed, digits: 2)) | \(format(Double(events) / elapsed)) |")
        }
        _ = try await store.delete("bench")
    }

    private func cost(client: PostgresClient, box: SecretBox, http: HTTPClient, receiver: WebhookReceiver, logger: Logger) async throws {
        try await client.query("INSERT INTO users (id) VALUES ('reader')")
        _ = try await ChannelStore(client: client).put(Channel(url: "news", kind: .feed, name: "News"))
        _ = try await TemplateStore(client: client).put(
            Template(
                key: "news",
                name: "News",
                variables: [.init(name: "title", type: .string, required: true)],
                data: .object(["title": .string("{{title}}")])
            )
        )
        guard let session = try await SessionStore(client: client).create(userID: "reader", lifetime: 86_400)?.token.text else {
            throw ValidationError("no session")
        }
        let store = WebhookStore(client: client, box: box)
        print("")
        print("Cost: \(requests) requests one after another over one connection, each a receipt (POST /v1/me/delivered) or a")
        print("read (POST /v1/me/channels/news/read with one id) of its own notification; with no webhook, then with one")
        print("that wants the event (written to the outbox in the request's transaction; no dispatcher runs); each")
        print("pass in the order listed, on the notifications the passes before it left.")
        print("")
        print("| request | webhook | requests/s | mean (ms) | events written |")
        print("|---|---|---:|---:|---:|")
        try await BenchServer.run(client: client, adminToken: Self.adminToken, logger: logger) { port in
            for (label, path, type) in [
                ("receipt", "/v1/me/delivered", WebhookEventType.notificationDelivered), ("read", "/v1/me/channels/news/read", .notificationRead),
            ] {
                // Twice in each order: each pass adds its notifications to the tables, so a later pass
                // runs on more data.
                for wanted in [false, true, true, false] {
                    if wanted {
                        _ = try await store.put(name: "bench", url: receiver.url, events: [type], secret: Self.secret, batchSize: 50)
                    }
                    var ids: [String] = []
                    for index in 0..<requests {
                        ids.append(try await send(http: http, port: port, title: "n\(index)"))
                    }
                    let eventsBefore = try await client.query("SELECT count(*) FROM webhook_events")[0].decode(Int.self)
                    let start = ContinuousClock.now
                    for id in ids {
                        let body = #"{"notification_ids":["\#(id)"]}"#
                        try await post(http: http, port: port, path: path, session: session, body: body)
                    }
                    let elapsed = elapsedSeconds(ContinuousClock.now - start)
                    let written = try await client.query("SELECT count(*) FROM webhook_events")[0].decode(Int.self) - eventsBefore
                    print(
                        "| \(label) | \(wanted ? "wants it" : "none") | \(format(Double(requests) / elapsed)) | \(format(elapsed / Double(requests) * 1000, digits: 3)) | \(written) |"
                    )
                    if wanted {
                        _ = try await store.delete("bench")
                    }
                }
            }
        }
    }

    private func send(http: HTTPClient, port: Int, title: String) async throws -> String {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/notifications")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(
            ByteBuffer(string: #"{"channel_url":"news","template_key":"news","targets":["reader"],"variables":{"title":"\#(title)"}}"#)
        )
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard let id = (try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])?["id"] as? String else {
            throw ValidationError("send failed: \(response.status) \(String(buffer: body))")
        }
        return id
    }

    private func post(http: HTTPClient, port: Int, path: String, session: String, body: String) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(session)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        let text = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code < 300 else { throw ValidationError("\(path) failed: \(response.status) \(String(buffer: text))") }
    }
}
