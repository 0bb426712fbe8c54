import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Prometheus
import Synchronization
import Testing

@testable import HeraldServer

/// Rate limits: token buckets on a clock the test moves, then the limits as routes apply them, and as
/// `herald serve` configures, reports and counts them.
@Suite("Rate limits")
struct RateLimitTests {
    static let adminToken = "test-admin-token-limits-0123456789"

    /// A clock the test sets by hand.
    final class ManualClock: Sendable {
        private let seconds = Mutex<Double>(0)
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
        var now: @Sendable () -> Double { { self.seconds.withLock { $0 } } }
    }

    @Test func aBucketGivesItsBurstThenRefillsAtItsRate() {
        let clock = ManualClock()
        let limiter = RateLimiter<String>(RateLimit(perSecond: 2, burst: 3), clock: clock.now)
        #expect((0..<3).map { _ in limiter.take("a") } == [nil, nil, nil])
        #expect(limiter.take("a") == 0.5)  // one token comes back every half second
        #expect(limiter.take("b") == nil)  // keys are separate
        clock.advance(0.5)
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") == 0.5)
        // `check` looks without taking.
        clock.advance(0.5)
        #expect(limiter.check("a") == nil)
        #expect(limiter.check("a") == nil)
        #expect(limiter.take("a") == nil)
        #expect(limiter.check("a") == 0.5)
        // Never more than the burst, however long it rests.
        clock.advance(3_600)
        #expect((0..<4).map { _ in limiter.take("a") } == [nil, nil, nil, 0.5])
    }

    @Test func fullBucketsAreForgotten() {
        let clock = ManualClock()
        let limiter = RateLimiter<String>(RateLimit(perSecond: 1, burst: 2), clock: clock.now)
        for key in ["a", "b", "c"] { _ = limiter.take(key) }
        #expect(limiter.count == 3)
        clock.advance(RateLimiter<String>.sweepInterval)
        _ = limiter.take("d")  // the sweep runs on a take once it is due; a, b and c are full again
        #expect(limiter.count == 1)
    }

    @Test func settingsParseAndRefuseNonsense() {
        #expect(RateLimit(parsing: "20/100") == RateLimit(perSecond: 20, burst: 100))
        #expect(RateLimit(parsing: "0.5/3") == RateLimit(perSecond: 0.5, burst: 3))
        for bad in ["20", "20/", "/5", "0/5", "5/0", "-1/5", "a/b", "20/100/1", "inf/3"] {
            #expect(RateLimit(parsing: bad) == nil, "\(bad)")
        }
    }

    /// Limits as the routes apply them: a session past its burst gets 429 with Retry-After, before any
    /// database work, while another session and the admin go on; failed authentications from an
    /// address close that address, admin routes included.
    @Test func routesAnswer429PastALimitAndOnlyForWhoSpentIt() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            for user in ["u1", "u2"] { _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil) }
            let u1 = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token.text
            let u2 = try #require(try await SessionStore(client: db.client).create(userID: "u2", lifetime: 3600)).token.text
            var settings = RequestLimits.Settings.off
            // Slow enough that nothing comes back during the test.
            settings.session = RateLimit(perSecond: 0.01, burst: 5)
            settings.failedAuthentication = RateLimit(perSecond: 0.01, burst: 3)
            let dependencies = HeraldApplication.Dependencies(
                client: db.client,
                migrator: Migrator(client: db.client, migrations: try TestPostgres.repositoryMigrations()),
                metricsRegistry: PrometheusCollectorRegistry(),
                adminToken: Self.adminToken,
                limits: RequestLimits(settings)
            )
            let app = HeraldApplication.build(dependencies, host: "127.0.0.1", port: 0, logger: .init(label: "test.limits"), services: [])
            try await app.test(.live) { client in
                func get(_ uri: String, _ token: String?) async throws -> TestResponse {
                    try await client.execute(uri: uri, method: .get, headers: jsonHeaders(bearer: token))
                }
                for _ in 0..<5 { #expect(try await get("/v1/me/unread", u1).status == .ok) }
                let limited = try await get("/v1/me/channels", u1)
                #expect(limited.status == .tooManyRequests)
                #expect(try errorCode(limited) == "rate_limited")
                // A token comes back every 100 s, less the time the five requests took: on a machine
                // busy with the whole suite, seconds of it.
                let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
                #expect((50...100).contains(retryAfter))
                // The other session, and the admin, are not held back.
                #expect(try await get("/v1/me/unread", u2).status == .ok)
                for _ in 0..<8 { #expect(try await get("/v1/push/failures", Self.adminToken).status == .ok) }

                // Three refused credentials — on a user route and an admin route — then the address is
                // refused before its credentials are looked at, a valid session's too.
                #expect(try await get("/v1/me/unread", "not-a-session").status == .unauthorized)
                #expect(try await get("/v1/push/failures", "not-the-admin-token").status == .unauthorized)
                #expect(try await get("/v1/me/unread", nil).status == .unauthorized)
                let closed = try await get("/v1/me/unread", u2)
                #expect(closed.status == .tooManyRequests)
                #expect(String(buffer: closed.body).contains("failed authentication"))
                #expect(try await get("/v1/push/failures", Self.adminToken).status == .tooManyRequests)
                // Routes open to anyone are not limited.
                #expect(try await get("/healthz", nil).status == .ok)
            }
        }
    }

    /// `herald serve` takes its limits from the environment, refuses nonsense, and counts what it
    /// refused in `/metrics`.
    @Test func serveConfiguresAndCountsItsLimits() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            let session = try #require(try await SessionStore(client: db.client).create(userID: "u1", lifetime: 3600)).token.text
            var environment = db.heraldEnvironment.merging([
                "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": Hex.encode(SecureRandom.bytes(32)),
                "HERALD_RATE_LIMIT_SESSION": "nonsense",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            let refused = try HeraldProcess(arguments: arguments, environment: environment)
            #expect(try await refused.waitForExit() != 0)
            #expect(refused.printed.contains { $0.contains("HERALD_RATE_LIMIT_SESSION must be RATE/BURST") })

            environment["HERALD_RATE_LIMIT_SESSION"] = "0.01/2"
            let herald = try HeraldProcess(arguments: arguments, environment: environment)
            defer { herald.signal(SIGKILL) }
            let line = try await herald.waitForLine(containing: "Herald listening on")
            let base = try #require(line.split(separator: " ").last.map(String.init))
            var statuses: [UInt] = []
            for _ in 0..<3 {
                var request = HTTPClientRequest(url: base + "/v1/me/unread")
                request.headers.add(name: "Authorization", value: "Bearer \(session)")
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                statuses.append(response.status.code)
                if response.status.code == 429 { #expect(response.headers.first(name: "Retry-After") == "100") }
                _ = try await response.body.collect(upTo: 1 << 16)
            }
            #expect(statuses == [200, 200, 429])
            let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/metrics"), timeout: .seconds(30))
            let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
            #expect(text.contains(#"herald_rate_limited_total{limit="session"} 1"#))
            herald.signal(SIGTERM)
            #expect(try await herald.waitForExit() == 0)
        }
    }
}
