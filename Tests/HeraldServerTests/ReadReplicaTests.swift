import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import Prometheus
import Testing

@testable import HeraldServer
@testable import HeraldServices

/// Sync reads on a hot standby (`HERALD_READ_DATABASE_URL`): a real primary and a standby streaming
/// from it, made by the test support, with a replay delay to make the standby lag on purpose.
@Suite("Read replica", .serialized)
struct ReadReplicaTests {
    static let adminToken = "test-admin-token-read-replica-0123"
    let collections = CollectionTests()

    /// A migrated primary with `CollectionTests`' world (user `u1`), its standby, and the replica that
    /// sends reads there.
    struct Replicated {
        var primary: PostgresClient
        /// The primary's own server (for a listener).
        var primaryConninfo: String
        var standby: PostgresClient
        var standbyCluster: PostgresCluster
        var replica: ReadReplica
        var world: CollectionTests.World
        var session: String { world.sessions["u1"]! }

        /// Whether the standby has replayed the session of `u1` (or its revocation).
        func standbyKnowsSession() async throws -> Bool {
            try await SessionStore(client: standby).isValid(try #require(SessionToken(parsing: session)))
        }
    }

    func withReplicated(applyDelay: Duration?, maximumLag: Duration = .seconds(60), _ body: (Replicated) async throws -> Void) async throws {
        try await TestPostgres.withStandby(applyDelay: applyDelay) { primaryCluster, standbyCluster in
            let primary = PostgresClient(configuration: .init(conninfo: primaryCluster.conninfo(), maximumConnections: 4))
            let standby = PostgresClient(
                configuration: .init(conninfo: standbyCluster.conninfo(), maximumConnections: 4, metricsPrefix: "herald_read_db")
            )
            do {
                try await Migrator(client: primary, migrations: try TestPostgres.repositoryMigrations()).migrate()
                var logger = Logger(label: "herald.test.replica")
                logger.logLevel = .critical
                let replica = ReadReplica(client: standby, primary: primary, maximumLag: maximumLag, logger: logger)
                try await waitUntil("the standby replays the schema") {
                    try await !standby.query("SELECT 1 FROM pg_class WHERE relname = 'console_sessions'").isEmpty
                }
                let world = try await collections.world(client: primary, users: ["u1"])
                try await body(
                    Replicated(
                        primary: primary,
                        primaryConninfo: primaryCluster.conninfo(),
                        standby: standby,
                        standbyCluster: standbyCluster,
                        replica: replica,
                        world: world
                    )
                )
            } catch {
                await standby.shutdown()
                await primary.shutdown()
                throw error
            }
            await standby.shutdown()
            await primary.shutdown()
        }
    }

    /// Herald on the primary, reading on `replica` when given.
    func app(_ primary: PostgresClient, replica: ReadReplica?) throws -> some ApplicationProtocol {
        let dependencies = HeraldApplication.Dependencies(
            client: primary,
            migrator: Migrator(client: primary, migrations: try TestPostgres.repositoryMigrations()),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: Self.adminToken,
            replica: replica
        )
        return Application(router: HeraldApplication.buildRouter(dependencies).router)
    }

    func poll(_ client: some TestClientProtocol, _ session: String, _ token: String) async throws -> [String: Any] {
        try await collections.collection(client, session, query: "?token=\(collections.escaped(token))")
    }

    @Test func aStandbyBehindTheTokenAnswersNothingNewAndNothingGoesBackOrIsSkipped() async throws {
        try await withReplicated(applyDelay: .seconds(3)) { world in
            let replica = world.replica
            await replica.probe()
            #expect(replica.statistics.fitness == .fit)
            try await app(world.primary, replica: nil).test(.router) { direct in
                try await app(world.primary, replica: replica).test(.router) { replicated in
                    // Issued a moment ago, the session is not on the standby yet: the primary decides
                    // (and answers), rather than the standby refusing it.
                    let first = try await collections.collection(replicated, world.session)
                    #expect(first["is_live"] as? Bool == true)
                    #expect(replica.statistics.fallbacks["unknown_session"] == 1)
                    let loaded = try #require(first["next_token"] as? String)
                    try await waitUntil("the standby replays the session") { try await world.standbyKnowsSession() }

                    // The primary answers a send at once; its token reaches beyond the delayed standby.
                    let a = try await world.world.send("a", to: ["u1"])
                    let fromPrimary = try await poll(direct, world.session, loaded)
                    #expect(collections.ids(fromPrimary) == ["\(a)"])
                    let ahead = try #require(fromPrimary["next_token"] as? String)

                    // Not looked at since the send, the replica cannot tell this token from one of a
                    // restored database's: the primary judges it.
                    let judged = try await poll(replicated, world.session, ahead)
                    #expect(judged["is_live"] as? Bool == true)
                    #expect(collections.ids(judged).isEmpty)
                    #expect(replica.statistics.fallbacks["token_ahead"] == 1)

                    // Once it has looked, the standby answers: nothing new yet, the token unchanged.
                    await replica.probe()
                    let waiting = try await poll(replicated, world.session, ahead)
                    #expect(waiting["is_live"] as? Bool == true)
                    #expect(collections.ids(waiting).isEmpty)
                    #expect(waiting["next_token"] as? String == ahead)
                    #expect(replica.statistics.behindTokens == 1)

                    // Sends polled only through the standby from there: each arrives once, in order,
                    // and `a`, which the token had seen, never comes back.
                    var sent: [String] = []
                    var received: [String] = []
                    var token = ahead
                    for round in 0..<5 {
                        sent.append(String(try await world.world.send("n\(round)", to: ["u1"])))
                        await replica.probe()
                        let answer = try await poll(replicated, world.session, token)
                        #expect(answer["is_live"] as? Bool == true)
                        received += collections.ids(answer)
                        token = try #require(answer["next_token"] as? String)
                    }
                    try await waitUntil("every send through the standby", timeout: .seconds(60)) {
                        await replica.probe()
                        let answer = try await poll(replicated, world.session, token)
                        #expect(answer["is_live"] as? Bool == true)
                        received += collections.ids(answer)
                        token = try #require(answer["next_token"] as? String)
                        return received.count >= sent.count
                    }
                    #expect(received == sent)
                    #expect(replica.statistics.standbyReads >= 6)
                    #expect(replica.statistics.behindTokens >= 2)
                }
            }
        }
    }

    @Test func aStandbyThatLagsOrFailsSendsReadsToThePrimaryAndARevocationArrivesWithReplay() async throws {
        try await withReplicated(applyDelay: .seconds(4), maximumLag: .seconds(1)) { world in
            let replica = world.replica
            try await waitUntil("the standby replays the session") { try await world.standbyKnowsSession() }
            try await waitUntil("the standby is fit") {
                await replica.probe()
                return replica.statistics.fitness == .fit
            }
            try await app(world.primary, replica: nil).test(.router) { direct in
                try await app(world.primary, replica: replica).test(.router) { replicated in
                    let a = try await world.world.send("a", to: ["u1"])
                    // Held back four seconds, the standby is more than a second behind for three: a probe slowed by a busy machine still sees it.
                    try await waitUntil("the standby lags") {
                        await replica.probe()
                        return replica.statistics.fitness == .lagging
                    }
                    #expect(try #require(replica.statistics.lag) > .seconds(1))
                    let lagging = try await collections.collection(replicated, world.session)
                    #expect(collections.ids(lagging) == ["\(a)"])
                    #expect(replica.statistics.fallbacks["lagging"] == 1)
                    try await waitUntil("the standby catches up") {
                        await replica.probe()
                        return replica.statistics.fitness == .fit
                    }
                    let reads = replica.statistics.standbyReads
                    let caughtUp = try await collections.collection(replicated, world.session)
                    #expect(collections.ids(caughtUp) == ["\(a)"])
                    #expect(replica.statistics.standbyReads == reads + 1)

                    // A standby that stops: the request that finds it gone runs again on the primary.
                    try await world.standbyCluster.stop()
                    let b = try await world.world.send("b", to: ["u1"])
                    let down = try await collections.collection(replicated, world.session)
                    #expect(collections.ids(down) == ["\(b)", "\(a)"])
                    #expect(replica.statistics.fallbacks["failed"] == 1)
                    #expect(replica.statistics.fitness == .down)
                    let unread = try await replicated.execute(uri: "/v1/me/unread", method: .get, headers: jsonHeaders(bearer: world.session))
                    #expect(unread.status == .ok)
                    #expect(replica.statistics.fallbacks["down"] == 1)
                    try await world.standbyCluster.start()
                    try await waitUntil("the standby is back", timeout: .seconds(60)) {
                        await replica.probe()
                        return replica.statistics.fitness == .fit
                    }

                    // A revoked session reads on the standby until it replays the revocation, then not.
                    let revoked = try await direct.execute(
                        uri: "/v1/users/u1/sessions",
                        method: .delete,
                        headers: jsonHeaders(bearer: Self.adminToken)
                    )
                    #expect(revoked.status == .ok)
                    try await waitUntil("the standby replays the revocation") { try await !world.standbyKnowsSession() }
                    await replica.probe()
                    let refused = try await replicated.execute(
                        uri: "/v1/me/channels/feed/collection",
                        method: .get,
                        headers: jsonHeaders(bearer: world.session)
                    )
                    #expect(refused.status == .unauthorized)
                }
            }
        }
    }
}

/// `RequestReads`, the one place a request's reads fall back from the standby to the primary: a read
/// the standby cannot answer runs again, alone, on the primary, and the request's later reads go there
/// too; what the handler does outside its reads runs once.
@Suite("Request reads")
struct RequestReadsTests {
    @Test func onlyTheReadTheStandbyFailedRunsAgainAndLaterReadsGoToThePrimary() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            // A standby no one listens for: every read there fails as an unreachable server does.
            let unreachable = PostgresClient(configuration: .init(conninfo: "host=127.0.0.1 port=1 connect_timeout=2", maximumConnections: 1))
            let replica = ReadReplica(client: unreachable, primary: db.client, maximumLag: .seconds(5), logger: Logger(label: "test.reads"))
            let reads = RequestReads(replica)
            var tries: [String] = []
            var writes = 0
            let first = try await reads.read { standby in
                tries.append(standby == nil ? "primary" : "standby")
                return try await (standby?.client ?? db.client).query("SELECT 1")[0].decode(Int.self)
            }
            writes += 1  // what a handler writes between its reads, on the primary
            let second = try await reads.read { standby in
                tries.append(standby == nil ? "primary" : "standby")
                return try await (standby?.client ?? db.client).query("SELECT 2")[0].decode(Int.self)
            }
            #expect(first == 1)
            #expect(second == 2)
            #expect(tries == ["standby", "primary", "primary"])
            #expect(writes == 1)
            #expect(reads.standby == nil)
            #expect(replica.statistics.fallbacks["failed"] == 1)
            #expect(replica.statistics.fitness == .down)
            // A request whose reads fell back is not counted as the standby's.
            reads.finish()
            #expect(replica.statistics.standbyReads == 0)
            await unreachable.shutdown()
        }
    }

    @Test func aNotFoundOnTheStandbyIsAskedOfThePrimaryAndOtherErrorsAreNot() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let standby = PostgresClient(configuration: .init(conninfo: db.conninfo, maximumConnections: 1))
            let replica = ReadReplica(client: standby, primary: db.client, maximumLag: .seconds(5), logger: Logger(label: "test.reads"))
            let reads = RequestReads(replica)
            var tries = 0
            let found = try await reads.read { standby in
                tries += 1
                guard standby == nil else { throw APIError(.notFound, code: "channel_not_found", message: "No channel with this URL.") }
                return "on the primary"
            }
            #expect(found == "on the primary")
            #expect(tries == 2)
            #expect(replica.statistics.fallbacks["failed"] == 1)

            // A refusal that is not about the standby (a bad request) is the answer: no second try.
            let second = RequestReads(replica)
            var attempts = 0
            await #expect(throws: APIError.self) {
                try await second.read { _ in
                    attempts += 1
                    throw APIError(.badRequest, code: "invalid_limit", message: "limit must be 1–100.")
                }
            }
            #expect(attempts == 1)
            #expect(second.standby != nil)
            second.finish()
            #expect(replica.statistics.standbyReads == 1)
            await standby.shutdown()
        }
    }
}

extension ReadReplicaTests {
    /// Herald on the primary with the change notifier (its listener on the primary), reading on the
    /// standby, on a loopback port for `body`.
    func withMemory(_ world: Replicated, _ body: @escaping @Sendable (any TestClientProtocol, ChangeNotifier) async throws -> Void) async throws {
        try await withMemoryApplication(
            client: world.primary,
            listenerConninfo: world.primaryConninfo,
            adminToken: Self.adminToken,
            replica: world.replica,
            body
        )
    }

    /// A change heard from the primary before the lagging standby has replayed it: the standby's quiet
    /// answer is not kept, so the change arrives once replayed, and memory answers only after that.
    @Test func aStandbysAnswerOlderThanAHeardChangeIsNeverKept() async throws {
        try await withReplicated(applyDelay: .seconds(2)) { world in
            await world.replica.probe()
            try await withMemory(world) { client, notifier in
                let first = try await collections.collection(client, world.session)
                var token = try #require(first["next_token"] as? String)
                try await waitUntil("the standby replays the session") { try await world.standbyKnowsSession() }
                let sent = try await world.world.send("late on the standby", to: ["u1"])
                await notifier.catchUp()
                var received: [String] = []
                try await waitUntil("the send through the standby", timeout: .seconds(60)) {
                    await world.replica.probe()
                    let answer = try await poll(client, world.session, token)
                    received += collections.ids(answer)
                    token = try #require(answer["next_token"] as? String)
                    return !received.isEmpty
                }
                #expect(received == ["\(sent)"])
                // Replayed and quiet: from memory now.
                let hits = notifier.tallies.pollHits
                try await waitUntil("a quiet poll from memory") {
                    let answer = try await poll(client, world.session, token)
                    #expect(collections.ids(answer).isEmpty)
                    token = try #require(answer["next_token"] as? String)
                    return notifier.tallies.pollHits > hits
                }
            }
        }
    }
}
