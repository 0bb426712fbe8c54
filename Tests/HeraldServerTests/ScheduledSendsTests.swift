import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Postgres
import Testing

@testable import HeraldServer

/// Scheduled sends through the admin API, made by the scheduler at times the test gives it (its
/// clock), never by waiting.
@Suite("Scheduled sends")
struct ScheduledSendsTests {
    static let adminToken = "test-admin-token-schedules-0123456789"

    struct World {
        let db: TestDatabase
        let dependencies: HeraldApplication.Dependencies
        let scheduler: Scheduler

        init(_ db: TestDatabase, users: [String: String]) async throws {
            self.db = db
            dependencies = try heraldDependencies(db, adminToken: ScheduledSendsTests.adminToken)
            scheduler = Scheduler(
                schedules: ScheduleStore(client: db.client),
                notifications: HeraldApplication.notificationsController(dependencies),
                logger: Logger(label: "test.scheduler")
            )
            _ = try await ChannelStore(client: db.client).put(
                HeraldCore.Channel(url: "feed", kind: .feed, name: "Feed", categories: [.init(id: "news", name: "News", isDefault: true)])
            )
            _ = try await TemplateStore(client: db.client).put(.plain)
            for (user, zone) in users {
                _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
                _ = try await db.client.query("UPDATE users SET time_zone = \(zone) WHERE id = \(user)")
            }
        }

        func app() -> some ApplicationProtocol {
            Application(router: HeraldApplication.buildRouter(dependencies).router)
        }

        /// The titles of the notifications `user` has, oldest first.
        func titles(_ user: String) async throws -> [String] {
            try await db.client.query(
                """
                SELECT n.data ->> 'title' FROM notification_recipients r JOIN users u ON u.key = r.user_key
                JOIN notifications n ON n.id = r.notification_id WHERE u.id = \(user) ORDER BY n.id
                """
            ).map { try $0.decode(String.self) }
        }

        func notifications() async throws -> Int64 {
            try await db.client.query("SELECT count(*) FROM notifications")[0].decode(Int64.self)
        }

        /// Reaches every user of every broadcast now.
        func fanOut() async throws {
            while try await NotificationStore(client: db.client).fanOutNextBatch(size: 2) != nil {}
        }
    }

    /// A send's body for `title`, to `audience` (a JSON fragment), with `timing` (more fields).
    static func body(_ title: String, _ timing: String, to audience: String = #""targets": ["u1"]"#) -> String {
        #"{"channel_url": "feed", "template_key": "plain", \#(audience), "variables": {"title": "\#(title)"}, \#(timing)}"#
    }

    static func at(_ date: Date) -> String { RFC3339.string(from: date) }

    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        _ body: String? = nil
    ) async throws -> (status: HTTPResponse.Status, json: [String: Any]) {
        let response = try await client.execute(
            uri: uri,
            method: method,
            headers: jsonHeaders(bearer: Self.adminToken),
            body: body.map { ByteBuffer(string: $0) }
        )
        return (response.status, try jsonObject(response))
    }

    @Test func badSchedulesAreRefusedAndStoreNothing() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await World(db, users: ["u1": "UTC"])
            let now = Date()
            try await world.app().test(.router) { client in
                for (body, code) in [
                    (#"{"channel_url": "feed", "template_key": "plain", "targets": ["u1"], "variables": {"title": "x"}}"#, "invalid_schedule"),
                    (Self.body("x", #""send_at": "\#(Self.at(now + 60))", "deliver_at_local": "2030-01-01T09:00""#), "invalid_schedule"),
                    (Self.body("x", #""send_at": "tomorrow""#), "invalid_schedule"),
                    (Self.body("x", #""send_at": "2030-01-01T09:00:00""#), "invalid_schedule"),
                    (Self.body("x", #""send_at": "\#(Self.at(now - 120))""#), "schedule_in_past"),
                    (Self.body("x", #""send_at": "\#(Self.at(now + 400 * 86_400))""#), "invalid_schedule"),
                    (Self.body("x", #""deliver_at_local": "2030-02-30T09:00""#), "invalid_schedule"),
                    (Self.body("x", #""deliver_at_local": "2030-01-01T09:00Z""#), "invalid_schedule"),
                    // Passed even where the day ends last.
                    (Self.body("x", #""deliver_at_local": "\#(LocalDateTime(now - 14 * 3600, in: LocalDateTime.lastZone))""#), "schedule_in_past"),
                    (Self.body("x", #""send_at": "\#(Self.at(now + 60))", "repeat": "hourly""#), "invalid_schedule"),
                    (Self.body("x", #""send_at": "\#(Self.at(now + 60))", "when": "soon""#), "unknown_field"),
                    // The send itself is checked now, as it will be made.
                    (#"{"channel_url": "feed", "template_key": "nope", "targets": ["u1"], "send_at": "\#(Self.at(now + 60))"}"#, "unknown_template"),
                    (
                        #"{"channel_url": "feed", "template_key": "plain", "targets": ["u1"], "send_at": "\#(Self.at(now + 60))"}"#,
                        "invalid_variables"
                    ),
                    (Self.body("x", #""send_at": "\#(Self.at(now + 60))""#, to: #""audience": "all", "targets": ["u1"]"#), "invalid_notification"),
                    (
                        Self.body("x", #""send_at": "\#(Self.at(now + 7200))", "expires_at": "\#(Self.at(now + 3600))""#),
                        "invalid_notification"
                    ),
                ] {
                    let (status, json) = try await call(client, .post, "/v1/scheduled-sends", body)
                    #expect(status == .badRequest, "\(body)")
                    #expect((json["error"] as? [String: Any])?["code"] as? String == code, "\(body): \(json)")
                }
                let (_, list) = try await call(client, .get, "/v1/scheduled-sends")
                #expect((list["scheduled_sends"] as? [Any])?.isEmpty == true)
                #expect(try await call(client, .get, "/v1/scheduled-sends/99").status == .notFound)
                #expect(try await call(client, .delete, "/v1/scheduled-sends/x1").status == .badRequest)
                #expect(try await call(client, .get, "/v1/scheduled-sends?state=done").status == .badRequest)
            }
        }
    }

    /// A retried scheduling with its `Idempotency-Key` schedules nothing more and gets the first answer,
    /// even once its time has passed; the key with another request is refused, and a bad key is a 400.
    @Test func aRetriedSchedulingWithItsKeySchedulesOnce() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await World(db, users: ["u1": "UTC"])
            // A whole second, so that it reads the same written with or without milliseconds.
            let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            try await world.app().test(.router) { client in
                func schedule(_ body: String, key: String) async throws -> (status: HTTPResponse.Status, replayed: Bool, json: [String: Any]) {
                    var headers = jsonHeaders(bearer: Self.adminToken)
                    headers[HTTPField.Name("Idempotency-Key")!] = key
                    let response = try await client.execute(
                        uri: "/v1/scheduled-sends",
                        method: .post,
                        headers: headers,
                        body: ByteBuffer(string: body)
                    )
                    return (response.status, response.headers[HTTPField.Name("Idempotent-Replayed")!] == "true", try jsonObject(response))
                }
                let body = Self.body("once", #""send_at": "\#(Self.at(now + 3600))""#)
                let first = try await schedule(body, key: "reminder-42")
                #expect(first.status == .created && !first.replayed)
                let id = try #require(first.json["id"] as? String)
                let again = try await schedule(body, key: "reminder-42")
                #expect(again.status == .created && again.replayed && again.json["id"] as? String == id)
                // The same instant written in another zone is the same request.
                let elsewhere = ISO8601DateFormatter()
                elsewhere.timeZone = TimeZone(secondsFromGMT: -5 * 3600)
                let sameInstant = try await schedule(Self.body("once", #""send_at": "\#(elsewhere.string(from: now + 3600))""#), key: "reminder-42")
                #expect(sameInstant.replayed && sameInstant.json["id"] as? String == id)

                // The first answer stands once the send is made and its time has passed.
                try await world.db.client.query("UPDATE scheduled_sends SET next_at = now() - interval '1 hour'")
                #expect(try await world.scheduler.runRound(now: Date()) == 1)
                let late = try await schedule(body, key: "reminder-42")
                #expect(late.replayed && late.json["id"] as? String == id && late.json["state"] as? String == "scheduled")

                // The same key with another request, or on a send, is refused; so is a scheduler's key.
                let other = try await schedule(Self.body("twice", #""send_at": "\#(Self.at(now + 3600))""#), key: "reminder-42")
                #expect(other.status == .unprocessableContent)
                #expect((other.json["error"] as? [String: Any])?["code"] as? String == "idempotency_key_reused")
                var headers = jsonHeaders(bearer: Self.adminToken)
                headers[HTTPField.Name("Idempotency-Key")!] = "reminder-42"
                let send = try await client.execute(
                    uri: "/v1/notifications",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: #"{"channel_url": "feed", "template_key": "plain", "targets": ["u1"], "variables": {"title": "once"}}"#)
                )
                #expect(send.status == .unprocessableContent)
                let reserved = try await schedule(body, key: "schedule:1:0:0")
                #expect(reserved.status == .badRequest)
                #expect((reserved.json["error"] as? [String: Any])?["code"] as? String == "invalid_idempotency_key")

                let (_, list) = try await call(client, .get, "/v1/scheduled-sends")
                #expect((list["scheduled_sends"] as? [Any])?.count == 1)
                #expect(try await world.titles("u1") == ["once"])
            }
        }
    }

    @Test func aSendAtIsMadeOnceWhenDueRepeatsAndCancelsBeforeItIsMade() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await World(db, users: ["u1": "UTC"])
            let now = Date()
            try await world.app().test(.router) { client in
                let due = now + 3600
                let (status, once) = try await call(client, .post, "/v1/scheduled-sends", Self.body("once", #""send_at": "\#(Self.at(due))""#))
                #expect(status == .created, "\(once)")
                #expect(once["state"] as? String == "scheduled" && once["send_at"] as? String == Self.at(due))
                #expect((once["request"] as? [String: Any])?["template_key"] as? String == "plain")
                let daily = try await call(
                    client,
                    .post,
                    "/v1/scheduled-sends",
                    Self.body("daily", #""send_at": "\#(Self.at(due))", "repeat": "daily""#)
                ).json
                let canceled = try await call(client, .post, "/v1/scheduled-sends", Self.body("never", #""send_at": "\#(Self.at(due))""#)).json
                let cancelID = canceled["id"] as! String
                let (cancelStatus, cancelBody) = try await call(client, .delete, "/v1/scheduled-sends/\(cancelID)")
                #expect(cancelStatus == .ok && cancelBody["state"] as? String == "canceled")

                // Not yet due: nothing is claimed.
                #expect(try await world.scheduler.runRound(now: due - 1) == 0)
                #expect(try await world.notifications() == 0)
                #expect(try await world.scheduler.runRound(now: due) == 2)
                #expect(try await world.titles("u1").sorted() == ["daily", "once"])
                // Made once: a second round finds nothing.
                #expect(try await world.scheduler.runRound(now: due + 1) == 0)

                let sent = try await call(client, .get, "/v1/scheduled-sends/\(once["id"] as! String)").json
                #expect(sent["state"] as? String == "sent" && (sent["notification_ids"] as? [String])?.count == 1)
                #expect(sent["next_at"] == nil)
                #expect(try await call(client, .delete, "/v1/scheduled-sends/\(once["id"] as! String)").status == .conflict)
                let repeating = try await call(client, .get, "/v1/scheduled-sends/\(daily["id"] as! String)").json
                #expect(repeating["state"] as? String == "scheduled" && repeating["occurrence"] as? Int == 1)
                #expect(repeating["send_at"] as? String == Self.at(due + 86_400) && repeating["next_at"] as? String == Self.at(due + 86_400))

                // The next day's occurrence, then the list by state.
                #expect(try await world.scheduler.runRound(now: due + 86_400) == 1)
                #expect(try await world.titles("u1").filter { $0 == "daily" }.count == 2)
                let waiting = try await call(client, .get, "/v1/scheduled-sends?state=scheduled").json
                #expect((waiting["scheduled_sends"] as? [[String: Any]])?.map { $0["id"] as? String } == [daily["id"] as? String])
                let all = try await call(client, .get, "/v1/scheduled-sends?limit=2").json
                #expect((all["scheduled_sends"] as? [Any])?.count == 2 && all["next"] as? String != nil)
                // The cancelled one was never made.
                #expect(try await world.titles("u1").contains("never") == false)
            }
        }
    }

    /// Users in three zones get a local-time send at their own 09:00: one part per zone, each made
    /// when it is 09:00 there, for listed users and for everyone (whose fan-out reaches only the part's
    /// zones).
    @Test func aLocalTimeReachesEachUserAtTheirOwnNineOClock() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let zones = ["tokyo": "Asia/Tokyo", "berlin": "Europe/Berlin", "newyork": "America/New_York"]
            let world = try await World(db, users: zones)
            let now = Date()
            // Two days ahead at 09:00, which has not passed in any zone.
            let day = LocalDateTime(now + 2 * 86_400, in: TimeZone(identifier: "UTC")!)
            let nine = LocalDateTime(year: day.year, month: day.month, day: day.day, hour: 9, minute: 0)
            try await world.app().test(.router) { client in
                let listed = try await call(
                    client,
                    .post,
                    "/v1/scheduled-sends",
                    Self.body("listed", #""deliver_at_local": "\#(nine)""#, to: #""targets": ["tokyo", "berlin", "newyork"]"#)
                )
                #expect(listed.status == .created, "\(listed.json)")
                #expect(listed.json["deliver_at_local"] as? String == nine.description)
                _ = try await call(
                    client,
                    .post,
                    "/v1/scheduled-sends",
                    Self.body("everyone", #""deliver_at_local": "\#(nine)""#, to: #""audience": "all""#)
                )

                var reached: Set<String> = []
                for user in ["tokyo", "berlin", "newyork"] {
                    let instant = nine.instant(in: TimeZone(identifier: zones[user]!)!)
                    // A second before: nobody new.
                    try await world.scheduler.runRound(now: instant - 1)
                    try await world.fanOut()
                    for other in zones.keys {
                        #expect(try await world.titles(other).count == (reached.contains(other) ? 2 : 0), "\(other) before \(user)'s 09:00")
                    }
                    #expect(try await world.scheduler.runRound(now: instant) == 2)
                    try await world.fanOut()
                    reached.insert(user)
                    for other in zones.keys {
                        #expect(try await world.titles(other).count == (reached.contains(other) ? 2 : 0), "\(other) at \(user)'s 09:00")
                    }
                }
                #expect(try await world.titles("berlin").sorted() == ["everyone", "listed"])
                let done = try await call(client, .get, "/v1/scheduled-sends/\(listed.json["id"] as! String)").json
                #expect(done["state"] as? String == "sent")
                #expect((done["zones_done"] as? [String])?.sorted() == zones.values.sorted())
                #expect((done["notification_ids"] as? [String])?.count == 3)
                // One notification per zone and send, each reaching its zone's user only.
                #expect(try await world.notifications() == 6)
            }
        }
    }
}

extension ScheduledSendsTests {
    /// Durable and once: `herald serve` is killed (SIGKILL) while it makes a burst of due sends, with
    /// claims it never recorded; three replicas started after it make the rest. Every scheduled send
    /// ends with exactly one notification, and no notification is made twice.
    @Test func sendsSurviveAKilledSchedulerAndAreMadeOnceAcrossThreeReplicas() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await World(db, users: ["u1": "UTC"])
            let count = 600
            let due = Date() + 3
            let store = ScheduleStore(client: db.client)
            for index in 0..<count {
                let request = #"{"channel_url":"feed","template_key":"plain","targets":["u1"],"variables":{"title":"s\#(index)"}}"#
                _ = try await store.create(
                    request: Array(request.utf8),
                    channelURL: "feed",
                    templateKey: "plain",
                    audience: "targets",
                    timing: .at(due),
                    repeats: nil,
                    nextAt: due
                ) { _ in StoredResponse(status: 201, body: []) }
            }
            @Sendable func sent() async throws -> Int64 {
                try await db.client.query("SELECT count(*) FROM scheduled_sends WHERE state = 'sent'")[0].decode(Int64.self)
            }
            let environment = db.heraldEnvironment.merging([
                "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SCHEDULE_LEASE": "2s", "HERALD_LOG_LEVEL": "info",
            ]) { $1 }
            let arguments = ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"]
            let first = try HeraldProcess(arguments: arguments, environment: environment)
            _ = try await first.waitForLine(containing: "Herald listening on")
            // Killed as soon as its first send is recorded: the rest of its claimed batch is in flight.
            try await waitUntil("the first scheduler's first send", timeout: .seconds(60)) { try await sent() > 0 }
            first.signal(SIGKILL)
            _ = try await first.waitForExit()
            let madeByTheFirst = try await sent()
            #expect(madeByTheFirst < count, "the first process made every send before it was killed")
            // Claims it took and never recorded: these wait for their lease, then pass to the others.
            let orphaned = try await db.client.query(
                "SELECT count(*) FROM scheduled_sends WHERE state = 'scheduled' AND claimed_until IS NOT NULL"
            )[0].decode(Int64.self)
            #expect(orphaned > 0)

            let replicas = try (0..<3).map { _ in try HeraldProcess(arguments: arguments, environment: environment) }
            for replica in replicas { _ = try await replica.waitForLine(containing: "Herald listening on") }
            try await waitUntil("every scheduled send to be made", timeout: .seconds(120)) { try await sent() == Int64(count) }
            for replica in replicas { replica.signal(SIGTERM) }
            for replica in replicas { #expect(try await replica.waitForExit() == 0) }

            let row = try await db.client.query(
                """
                SELECT (SELECT count(*) FROM scheduled_sends WHERE cardinality(notification_ids) = 1),
                    (SELECT count(*) FROM notifications), (SELECT count(DISTINCT data ->> 'title') FROM notifications),
                    (SELECT count(*) FROM notification_recipients),
                    (SELECT count(*) FROM scheduled_sends WHERE attempts > 1)
                """
            )[0]
            let (once, notifications, titles, copies, retaken) = try row.decode((Int64, Int64, Int64, Int64, Int64).self)
            #expect(once == Int64(count))
            #expect(notifications == Int64(count) && titles == Int64(count) && copies == Int64(count))
            #expect(retaken > 0)
        }
    }
}

extension ScheduledSendsTests {
    /// A worker that made a local time's part and died before recording it: the next worker's
    /// send of the same part is answered by the first (its zones only), and the zones that became
    /// due in between get a part of their own — nobody is missed, nobody gets two.
    @Test func aRetriedPartRecordsTheZonesItsFirstSendReached() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let zones = ["tokyo": "Asia/Tokyo", "berlin": "Europe/Berlin"]
            let world = try await World(db, users: zones)
            let day = LocalDateTime(Date() + 2 * 86_400, in: TimeZone(identifier: "UTC")!)
            let nine = LocalDateTime(year: day.year, month: day.month, day: day.day, hour: 9, minute: 0)
            let (tokyo, berlin) = (nine.instant(in: TimeZone(identifier: "Asia/Tokyo")!), nine.instant(in: TimeZone(identifier: "Europe/Berlin")!))
            try await world.app().test(.router) { client in
                let created = try await call(
                    client,
                    .post,
                    "/v1/scheduled-sends",
                    Self.body("morning", #""deliver_at_local": "\#(nine)""#, to: #""targets": ["tokyo", "berlin"]"#)
                )
                #expect(created.status == .created)
            }
            let store = ScheduleStore(client: db.client)
            // The first worker claims at Tokyo's 09:00 and makes Tokyo's part, then dies.
            let claimed = try #require(try await store.claimDue(now: tokyo, limit: 10, lease: .seconds(60)).first)
            let body = try JSONDecoder().decode(SendNotificationRequest.self, from: Data(claimed.request))
            _ = try await world.scheduler.send(
                body,
                key: "schedule:\(claimed.id):0:0",
                zones: ["Asia/Tokyo"],
                fence: ScheduleStore.fence(claimed),
                now: tokyo
            )
            #expect(try await world.titles("tokyo") == ["morning"])
            #expect(try await world.titles("berlin").isEmpty)
            // Its lease runs out after Berlin's 09:00: the next worker finds both zones due.
            #expect(try await world.scheduler.runRound(now: berlin + 61) == 1)
            #expect(try await world.titles("tokyo") == ["morning"])
            let afterRetry = try #require(try await store.get(claimed.id))
            #expect(afterRetry.zonesDone == ["Asia/Tokyo"] && afterRetry.state == .scheduled)
            #expect(try await world.scheduler.runRound(now: berlin + 62) == 1)
            #expect(try await world.titles("berlin") == ["morning"])
            #expect(try await world.titles("tokyo") == ["morning"])
            #expect(try await store.get(claimed.id)?.state == .sent)
        }
    }

    /// A cancellation and a worker's send never cross: while the claim holds the cancellation is
    /// refused; once it has run out the cancellation wins, and the worker, late, sends nothing.
    /// An erasure takes the user out of a scheduled send while a worker holds it: the worker sends
    /// nothing from the request it read, the next round sends to the others; and a part sent before
    /// the erasure but never recorded is answered by that send when made again, the erasure's sweep
    /// notwithstanding.
    @Test func anErasureWhileAWorkerHoldsASendLeavesTheOthersOneSend() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await World(db, users: ["u1": "UTC", "u2": "UTC", "u3": "UTC"])
            let due = Date() + 3600
            try await world.app().test(.router) { client in
                for title in ["held", "sent"] {
                    _ = try await call(
                        client,
                        .post,
                        "/v1/scheduled-sends",
                        Self.body(title, #""send_at": "\#(Self.at(due))""#, to: #""targets": ["u1", "u2"]"#)
                    )
                }
            }
            let store = ScheduleStore(client: db.client)
            let claimed = try await store.claimDue(now: due, limit: 10, lease: .seconds(60))
            try #require(claimed.count == 2)
            // The second's part is made, and its worker dies before recording it.
            _ = try await world.scheduler.part(of: claimed[1], now: due)
            #expect(try await world.titles("u2") == ["sent"])

            let erasures = UserErasureStore(client: db.client)
            _ = try await erasures.start(userID: "u1")
            // Its sweep removes everything of theirs it can now (the idempotency records filed under
            // them among it) before the workers come back.
            var swept = 0
            while let progress = try await erasures.eraseNextBatch(size: 100, grace: .zero), progress.removedRows > 0 {
                swept += progress.removedRows
            }
            #expect(swept > 0)
            // The first worker comes back with the request it read: its fence stops it.
            await world.scheduler.fire(claimed[0], now: due)
            #expect(try await world.titles("u2") == ["sent"])
            // The erasure ended both claims: the next round makes the first for u2, and answers the
            // second's part with the send made before.
            #expect(try await world.scheduler.runRound(now: due + 1) == 2)
            #expect(try await world.titles("u2") == ["sent", "held"])
            #expect(try await world.notifications() == 2)
            for schedule in claimed {
                let found = try #require(try await store.get(schedule.id))
                #expect(found.state == .sent && found.notificationIDs.count == 1)
                #expect(!String(decoding: found.request, as: UTF8.self).contains("u1"))
            }
        }
    }

    @Test func aCancelledSendIsNotMadeByTheWorkerThatHeldIt() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let world = try await World(db, users: ["u1": "UTC"])
            let due = Date() + 3600
            try await world.app().test(.router) { client in
                _ = try await call(client, .post, "/v1/scheduled-sends", Self.body("late", #""send_at": "\#(Self.at(due))""#))
            }
            let store = ScheduleStore(client: db.client)
            let claimed = try #require(try await store.claimDue(now: due, limit: 10, lease: .seconds(60)).first)
            guard case .sending = try await store.cancel(claimed.id, now: due + 1) else {
                Issue.record("a held send was cancelled")
                return
            }
            guard case .canceled = try await store.cancel(claimed.id, now: due + 61) else {
                Issue.record("a send whose lease ran out was not cancelled")
                return
            }
            // The worker that held it comes back: its send is stopped by the fence, and nothing is recorded.
            await world.scheduler.fire(claimed, now: due + 62)
            #expect(try await world.notifications() == 0)
            #expect(try await store.get(claimed.id)?.state == .canceled)
        }
    }
}
