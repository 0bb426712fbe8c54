import Foundation
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// Requests that are not valid HTTP, sent over a real socket to Herald's own server channel (the one
/// with the WebSocket upgrade): answered and closed, never left hanging.
@Suite("Protocol errors")
struct ProtocolErrorTests {
    func withServer(idleTimeout: Duration = .seconds(75), _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let app = HeraldApplication.build(
                try heraldDependencies(db, adminToken: nil), host: "127.0.0.1", port: 0, logger: Logger(label: "test.protocol"), idleTimeout: idleTimeout
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
    /// (The server's one-second timeout is what the exchange waits for; its own limit is ten.)
    @Test func idleConnectionsAreClosed() async throws {
        try await withServer(idleTimeout: .seconds(1)) { port in
            for silence in ["", "GET /healthz HTTP/1.1\r\nHost: x\r\n"] {
                let outcome = try await RawHTTPExchange.send(Array(silence.utf8), port: port)
                #expect(outcome.response.isEmpty)
                #expect(outcome.closedByServer, "\(silence.debugDescription) was left open")
            }
            let answered = try await RawHTTPExchange.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), port: port)
            #expect(answered.response.hasPrefix("HTTP/1.1 200"))
            #expect(answered.closedByServer)
        }
    }
}
