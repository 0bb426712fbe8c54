import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres
import Testing

/// What `herald serve` writes to its log, at its most talkative level: requests, a stream opened with
/// `?access_token=`, a sync with its token, a push through the logging transport. No session token,
/// sync token, admin token, secret key or notification text may appear in it.
@Suite("Log redaction")
struct LogRedactionTests {
    static let adminToken = "test-admin-token-logs-0123456789abcdef"

    func call(_ method: HTTPMethod, _ url: String, bearer: String? = nil, body: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test func atTraceLevelNoTokenSecretOrPayloadIsLogged() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
            )
            _ = try await TemplateStore(client: db.client).put(.plain)
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let session = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token.text
            let secretKey = Hex.encode(SecureRandom.bytes(32))
            let title = "Confidential-title-4711"

            let herald = try HeraldProcess(
                arguments: ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
                environment: db.heraldEnvironment.merging([
                    "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": secretKey,
                    "HERALD_LOG_LEVEL": "trace", "HERALD_REFRESH_MIN_INTERVAL": "0s",
                ]) { $1 }
            )
            defer { herald.signal(SIGKILL) }
            let line = try await herald.waitForLine(containing: "Herald listening on")
            let base = try #require(line.split(separator: " ").last.map(String.init))

            // A browser's stream request names its session in the query.
            #expect(try await call(.GET, base + "/v1/me/stream?access_token=\(session)").status == 426)
            // A sync, then a sync from its token.
            let first = try await call(.GET, base + "/v1/me/channels/feed/collection?limit=5", bearer: session)
            #expect(first.status == 200)
            let syncToken = try #require(
                (try JSONSerialization.jsonObject(with: Data(first.body.utf8)) as? [String: Any])?["next_token"] as? String
            )
            #expect(try await call(.GET, base + "/v1/me/channels/feed/collection?token=\(syncToken)&limit=5", bearer: session).status == 200)
            // A device, and a notification whose refresh push goes to the log (no credentials).
            let device = String(repeating: "ab", count: 32)
            let registered = try await call(
                .PUT,
                base + "/v1/me/devices/\(device)",
                bearer: session,
                body: #"{"environment":"sandbox","topic":"com.example.herald"}"#
            )
            #expect(registered.status == 201)
            let sent = try await call(
                .POST,
                base + "/v1/notifications",
                bearer: Self.adminToken,
                body: #"{"channel_url":"feed","template_key":"plain","variables":{"title":"\#(title)"},"targets":["u1"],"push":{"alert":true}}"#
            )
            #expect(sent.status == 201, "\(sent.body)")
            _ = try await herald.waitForLine(containing: "push (logging transport)")

            herald.signal(SIGTERM)
            #expect(try await herald.waitForExit() == 0)
            let log = herald.printed
            // The log did record the requests, at trace level, with the query's secrets replaced.
            #expect(log.contains { $0.contains("/v1/me/stream?access_token=<redacted>") })
            #expect(log.contains { $0.contains("/v1/me/channels/feed/collection?token=<redacted>&limit=5") })
            #expect(log.contains { $0.contains("payload_bytes=") })
            for (secret, what) in [
                (session, "a session token"), (syncToken, "a sync token"), (Self.adminToken, "the admin token"), (secretKey, "the secret key"),
                (title, "a notification's text"),
            ] {
                let lines = log.filter { $0.contains(secret) }
                #expect(lines.isEmpty, "\(what) in the log: \(lines)")
            }
        }
    }
}
