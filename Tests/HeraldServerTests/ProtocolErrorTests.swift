import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
import Testing

/// Requests that are not valid HTTP, sent over a real socket to Herald's own server channel (the one
/// with the WebSocket upgrade): answered and closed, never left hanging.
@Suite("Protocol errors")
struct ProtocolErrorTests {
    /// The server runs on event loops of its own: what these tests time (the idle timeout's close) must
    /// not wait behind the shared loops' work for the rest of the suite running in parallel.
    func withServer(idleTimeout: Duration = .seconds(75), _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { loops.shutdownGracefully { _ in } }
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let app = HeraldApplication.build(
                try heraldDependencies(db, adminToken: nil),
                host: "127.0.0.1",
                port: 0,
                logger: Logger(label: "test.protocol"),
                idleTimeout: idleTimeout,
                eventLoopGroup: .shared(loops)
            )
            try await app.test(.live) { client in
                try await body(try #require(client.port))
            }
        }
    }

    @Test func anOversizedFirstHeadIsA431AndTheConnectionCloses() async throws {
        try await withServer { port in
            let head = "GET /v1/me/unread HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(String(repeating: "x", count: 100_000))\r\n\r\n"
            let outcome = try await RawHTTPExchange.send(Array(head.utf8), port: port)
            #expect(outcome.response.hasPrefix("HTTP/1.1 431"), "\(outcome.response.prefix(200))")
            #expect(outcome.response.contains(#"{"error":{"code":"headers_too_large","#))
            #expect(outcome.closedByServer)
        }
    }

    @Test func garbageIsA400AndTheConnectionCloses() async throws {
        try await withServer { port in
            for request in ["GARBAGE\r\n\r\n", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"] {
                let outcome = try await RawHTTPExchange.send(Array(request.utf8), port: port)
                #expect(outcome.response.hasPrefix("HTTP/1.1 400"), "\(outcome.response.prefix(200))")
                #expect(outcome.response.contains(#"{"error":{"code":"bad_request","#))
                #expect(outcome.closedByServer)
            }
        }
    }

    /// After a good first request the connection is Hummingbird's: a bad second one is answered after
    /// the first, with the same JSON errors, and ends the connection.
    @Test func aBadSecondRequestEndsTheConnectionAfterTheFirstIsAnswered() async throws {
        try await withServer { port in
            let good = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            for (bad, status, code) in [
                ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n", 431, "headers_too_large"),
                ("GARBAGE\r\n\r\n", 400, "bad_request"),
            ] {
                let outcome = try await RawHTTPExchange.send(Array((good + bad).utf8), port: port)
                #expect(outcome.response.hasPrefix("HTTP/1.1 200"))
                let second = try #require(outcome.response.range(of: "HTTP/1.1 \(status)"), "\(outcome.response.prefix(400))")
                let answer = outcome.response[second.lowerBound...]
                #expect(answer.lowercased().contains("content-type: application/json"))
                #expect(answer.contains(#"{"error":{"code":"\#(code)","#), "\(answer.prefix(300))")
                #expect(outcome.closedByServer)
            }
        }
    }

    /// Idle connections end: one that never sends a whole head, and a kept-alive one after its answer.
    /// (The server's one-second timeout is what the exchange waits for; its own limit, 120 s, only
    /// bounds a failure. This test once failed now and then under the whole suite: a PostgreSQL server
    /// another test started at the wrong moment had inherited the accepted socket and held the
    /// connection open after Herald closed it. `ChildProcess` now closes every inherited descriptor.)
    @Test func idleConnectionsAreClosed() async throws {
        try await withServer(idleTimeout: .seconds(1)) { port in
            for silence in ["", "GET /healthz HTTP/1.1\r\nHost: x\r\n"] {
                let started = ContinuousClock.now
                let outcome = try await RawHTTPExchange.send(Array(silence.utf8), port: port, timeout: .seconds(120))
                #expect(outcome.response.isEmpty)
                #expect(outcome.closedByServer, "\(silence.debugDescription) was left open for \(ContinuousClock.now - started)")
            }
            let started = ContinuousClock.now
            let answered = try await RawHTTPExchange.send(
                Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
                port: port,
                timeout: .seconds(120)
            )
            #expect(answered.response.hasPrefix("HTTP/1.1 200"))
            #expect(answered.closedByServer, "an answered connection was left open for \(ContinuousClock.now - started)")
        }
    }

    /// A server with an admin token and one user session, for the requests that must get past
    /// authentication before they can go wrong.
    func withSessionServer(_ body: @escaping @Sendable (_ port: Int, _ session: String) async throws -> Void) async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "feed", kind: .feed, name: "Feed"))
            let session = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token.text
            let app = HeraldApplication.build(
                try heraldDependencies(db, adminToken: Self.adminToken),
                host: "127.0.0.1",
                port: 0,
                logger: Logger(label: "test.protocol")
            )
            try await app.test(.live) { client in
                try await body(try #require(client.port), session)
            }
        }
    }

    static let adminToken = "test-admin-token-protocol-0123456"

    /// A body that cannot be read as HTTP/1.1 is the client's fault: a JSON 400, then the connection
    /// closes (before, the handler's read threw and it was a 500).
    @Test func aMalformedChunkedBodyIsA400() async throws {
        try await withSessionServer { port, session in
            for chunks in ["zz\r\nabc\r\n0\r\n\r\n", "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n", "2\r\nabcdef\r\n0\r\n\r\n"] {
                let request =
                    "POST /v1/me/channels/feed/read HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(session)\r\nTransfer-Encoding: chunked\r\n\r\n\(chunks)"
                let outcome = try await RawHTTPExchange.send(Array(request.utf8), port: port)
                #expect(outcome.response.hasPrefix("HTTP/1.1 400"), "\(outcome.response.prefix(200))")
                #expect(outcome.response.contains(#"{"error":{"code":"bad_request","#))
                #expect(outcome.closedByServer)
            }
        }
    }

    /// An `Upgrade` the server does not serve is ignored (RFC 9110 §7.8): the request is answered as a
    /// plain one, and the connection closes after it. A WebSocket handshake without its key is a 400.
    @Test func upgradesTheServerDoesNotServeAreAnswered() async throws {
        try await withSessionServer { port, session in
            for upgrade in [
                "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA",
                "Connection: Upgrade\r\nUpgrade: foo/1",
            ] {
                for prefix in ["", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"] {
                    let outcome = try await RawHTTPExchange.send(
                        Array((prefix + "GET /readyz HTTP/1.1\r\nHost: x\r\n\(upgrade)\r\n\r\n").utf8),
                        port: port
                    )
                    #expect(outcome.response.contains(#"{"status":"ready"}"#), "\(upgrade): \(outcome.response.prefix(300))")
                    #expect(outcome.closedByServer)
                }
            }
            for handshake in ["Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8"] {
                let request =
                    "GET /v1/me/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(session)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\(handshake)\r\n\r\n"
                let outcome = try await RawHTTPExchange.send(Array(request.utf8), port: port)
                #expect(outcome.response.hasPrefix("HTTP/1.1 400"), "\(outcome.response.prefix(300))")
                #expect(outcome.response.contains(#"{"error":{"code":"invalid_websocket_handshake","#))
                #expect(outcome.closedByServer)
            }
        }
    }

    /// `CONNECT` gets the usual JSON error with a body (NIO's encoder writes none for it), first on a
    /// connection or after an answered request.
    @Test func connectIsAnsweredWithTheUsualErrorBody() async throws {
        try await withServer { port in
            for prefix in ["", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"] {
                let outcome = try await RawHTTPExchange.send(
                    Array((prefix + "CONNECT localhost:80 HTTP/1.1\r\nHost: localhost:80\r\n\r\n").utf8),
                    port: port
                )
                let answer = try #require(outcome.response.range(of: "HTTP/1.1 405"), "\(outcome.response.prefix(300))")
                #expect(outcome.response[answer.lowerBound...].contains(#"{"error":{"code":"method_not_allowed","#))
                #expect(prefix.isEmpty || outcome.response.hasPrefix("HTTP/1.1 200"))
                #expect(outcome.closedByServer)
            }
        }
    }

    /// A declared body over the route's limit is refused before it is sent — with or without
    /// `Expect: 100-continue` — naming that route's limit, and the connection closes.
    @Test func aDeclaredBodyOverTheLimitIsA413AtOnce() async throws {
        try await withSessionServer { port, session in
            for (path, bearer, size, limit) in [
                ("/v1/me/channels/feed/read", session, 5_000_000, 1_048_576), ("/v1/notifications", Self.adminToken, 9_000_000, 8_388_608),
            ] {
                for expect in ["", "Expect: 100-continue\r\n"] {
                    let head =
                        "POST \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(bearer)\r\nContent-Type: application/json\r\nContent-Length: \(size)\r\n\(expect)\r\n"
                    let outcome = try await RawHTTPExchange.send(Array(head.utf8), port: port)
                    #expect(outcome.response.hasPrefix("HTTP/1.1 413"), "\(path): \(outcome.response.prefix(300))")
                    #expect(outcome.response.contains("larger than \(limit) bytes"), "\(outcome.response)")
                    #expect(outcome.closedByServer)
                }
            }
        }
    }
}
