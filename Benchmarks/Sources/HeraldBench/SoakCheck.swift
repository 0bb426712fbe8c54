import Foundation
import HeraldTesting
import NIOHTTP1
import Postgres

/// The soak's end: with the load stopped and the background work drained, everything the load saw is
/// held against the primary.
struct SoakCheck {
    let primary: PostgresClient
    let standby: PostgresClient
    let mock: MockAPNsServer
    let client: SoakHTTP

    func run(
        pollers: [SoakPoller],
        sends: [(id: Int64, targets: Set<String>?)],
        sessions: [String: String],
        devices: [String: String]
    ) async throws -> [String] {
        var findings: [String] = []
        try await waitUntil("every broadcast's fan-out", timeout: .seconds(180)) {
            try await primary.query("SELECT count(*) FROM notifications WHERE fanout_state = 'running'")[0].decode(Int64.self) == 0
        }
        try await waitUntil("the standby to replay everything", timeout: .seconds(120)) {
            let end = try await primary.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")[0].decode(Int64.self)
            let replayed = try await standby.query("SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint")[0].decode(Int64.self)
            return replayed >= end
        }

        // Every acknowledged send reached exactly its audience.
        let userCount = sessions.count
        let counts = Dictionary(
            uniqueKeysWithValues: try await primary.query(
                "SELECT notification_id, count(*) FROM notification_recipients WHERE notification_id = ANY(\(sends.map(\.id))) GROUP BY notification_id"
            ).map { try $0.decode((Int64, Int64).self) }
        )
        var wrongAudience = 0
        for send in sends where counts[send.id] != Int64(send.targets?.count ?? userCount) { wrongAudience += 1 }
        let broadcasts = sends.filter { $0.targets == nil }.count
        print("Sends acknowledged: \(sends.count - broadcasts) targeted, \(broadcasts) broadcasts; with a wrong audience: \(wrongAudience).")
        if wrongAudience > 0 { findings.append("\(wrongAudience) acknowledged sends did not reach exactly their audience") }

        // Every polling user's view, built only from incremental syncs, is the collection.
        var lost = 0
        var extra = 0
        var stale = 0
        for poller in pollers {
            guard await poller.sync(client) != nil else {
                findings.append("the last sync of \(poller.user) failed")
                continue
            }
            let truth = Dictionary(
                uniqueKeysWithValues: try await primary.query(
                    """
                    SELECT r.notification_id::text, r.change_xid FROM notification_recipients r JOIN users u ON u.key = r.user_key
                    WHERE u.id = \(poller.user) AND NOT r.deleted
                    """
                ).map { try $0.decode((String, Int64).self) }
            )
            lost += Set(truth.keys).subtracting(poller.held.keys).count
            extra += Set(poller.held.keys).subtracting(truth.keys).count
            stale += truth.filter { id, position in poller.held[id].map { $0 != position } ?? false }.count
        }
        let repeats = pollers.map(\.repeats).reduce(0, +)
        let reloads = pollers.map(\.reloads).reduce(0, +)
        let heldTotal = pollers.map(\.held.count).reduce(0, +)
        print(
            "Polling users: \(pollers.count), holding \(heldTotal) notifications; lost \(lost), extra \(extra), "
                + "older versions \(stale), repeated \(repeats), reloads \(reloads)."
        )
        if lost + extra + stale + repeats + reloads > 0 {
            findings.append("collections: lost \(lost), extra \(extra), older versions \(stale), repeated \(repeats), reloads \(reloads)")
        }

        // Every user's unread count (through the load balancer, so from the standby) is the count of
        // their unread copies.
        let truth = Dictionary(
            uniqueKeysWithValues: try await primary.query(
                """
                SELECT u.id, count(r.notification_id) FILTER (WHERE r.status < 2 AND NOT r.deleted)
                FROM users u LEFT JOIN notification_recipients r ON r.user_key = u.key GROUP BY u.id
                """
            ).map { try $0.decode((String, Int64).self) }
        )
        var wrongCounts = 0
        for (user, session) in sessions {
            guard let (status, json) = await client.call("unread", .GET, "/v1/me/unread", bearer: session), status == 200 else {
                findings.append("the unread counts of \(user) could not be read")
                continue
            }
            if (json["total"] as? Int).map(Int64.init) != truth[user] { wrongCounts += 1 }
        }
        print("Unread counts checked: \(sessions.count); wrong: \(wrongCounts).")
        if wrongCounts > 0 { findings.append("\(wrongCounts) users' unread counts differ from their unread copies") }

        // Every device with a change it has not synced has been pushed: no want is left unpushed, and
        // every device waiting for its sync got its push from the mock's point of view.
        try? await waitUntil("the dispatchers to push every wanted device", timeout: .seconds(90)) {
            try await primary.query("SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL AND NOT outstanding")[0]
                .decode(Int64.self) == 0
        }
        let unpushed = try await primary.query(
            "SELECT count(*) FROM device_push_state WHERE wanted_xid IS NOT NULL AND NOT outstanding"
        )[0].decode(Int64.self)
        let outstanding = Set(
            try await primary.query("SELECT token FROM devices JOIN device_push_state p ON p.device_id = devices.id WHERE p.outstanding").map {
                try $0.decode(String.self)
            }
        )
        let pushed = Set(mock.requests.filter { $0.status == 200 }.map(\.deviceToken))
        let missing = outstanding.subtracting(pushed).count
        print(
            "Pushes answered by the mock APNs: \(mock.requests.filter { $0.status == 200 }.count) to \(pushed.count) devices; "
                + "devices waiting unpushed: \(unpushed); pushed as outstanding but never seen by APNs: \(missing)."
        )
        if unpushed > 0 { findings.append("\(unpushed) devices have a change they were never pushed for") }
        if missing > 0 { findings.append("\(missing) devices are marked pushed but APNs never got their push") }
        return findings
    }
}
