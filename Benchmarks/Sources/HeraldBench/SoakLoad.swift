import AsyncHTTPClient
import Foundation
import HeraldTesting
import NIOCore
import NIOHTTP1
import Synchronization

/// The soak's requests, through the load balancer, each recorded.
struct SoakHTTP: Sendable {
    let http: HTTPClient
    let base: String
    let recorder: SoakRecorder

    /// Sends a request and records it as `kind`: a failure unless it is answered with a 2xx. Returns
    /// the status and the JSON body (nil after a transport error).
    func call(
        _ kind: String,
        _ method: HTTPMethod,
        _ path: String,
        bearer: String,
        body: String? = nil
    ) async -> (status: Int, json: [String: Any])? {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let began = ContinuousClock.now
        do {
            let response = try await http.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 16 << 20)
            let status = Int(response.status.code)
            let json = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any] ?? [:]
            recorder.record(kind, began: began, failure: (200..<300).contains(status) ? nil : "\(status) \(String(buffer: bytes).prefix(200))")
            return (status, json)
        } catch {
            recorder.record(kind, began: began, failure: "\(error)")
            return nil
        }
    }

    static func json(_ object: Any) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self)
    }
}

/// A flag the load's tasks poll to stop.
final class SoakStop: Sendable {
    private let stopped = Atomic(false)
    var isSet: Bool { stopped.load(ordering: .relaxed) }
    func set() { stopped.store(true, ordering: .relaxed) }
}

/// What the senders had acknowledged (201): each notification and whom it went to (`nil`: everyone).
final class SoakSends: Sendable {
    private let sent = Mutex<[(id: Int64, targets: Set<String>?)]>([])
    func add(_ id: Int64, targets: Set<String>?) { sent.withLock { $0.append((id, targets)) } }
    var all: [(id: Int64, targets: Set<String>?)] { sent.withLock { $0 } }
}

/// One polling user's view of their collection, built only from incremental syncs since the start.
final class SoakPoller: @unchecked Sendable {
    let user: String
    let session: String
    let device: String
    var token: String?
    /// Notification id → the position of the version held.
    var held: [String: Int64] = [:]
    /// A version that came again at a position not newer than the one held.
    var repeats = 0
    /// Answers with `is_live: false` (the view would have to start again).
    var reloads = 0

    init(user: String, session: String, device: String) {
        self.user = user
        self.session = session
        self.device = device
    }

    /// Polls until the answer has no more; returns the ids that arrived (new or changed), or nil when a
    /// request failed.
    func sync(_ client: SoakHTTP) async -> [String]? {
        var arrived: [String] = []
        while true {
            var path = "/v1/me/channels/feed/collection?limit=100&device=\(device)"
            if let token { path += "&token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)" }
            guard let (status, json) = await client.call("poll", .GET, path, bearer: session), status == 200 else { return nil }
            if token != nil, json["is_live"] as? Bool != true { reloads += 1 }
            for item in json["notifications"] as? [[String: Any]] ?? [] {
                guard let id = item["id"] as? String, let position = (item["position"] as? String).flatMap({ Int64($0) }) else { continue }
                if let old = held[id], old >= position { repeats += 1 }
                held[id] = max(held[id] ?? 0, position)
                arrived.append(id)
            }
            for id in json["deleted"] as? [String] ?? [] { held[id] = nil }
            if let next = json["next_token"] as? String { token = next }
            guard json["has_more"] as? Bool == true else { return arrived }
        }
    }
}

/// The soak's load: targeted sends and broadcasts, polling users with receipts and read marks, live
/// streams that open and drop, and devices that sync now and then (as an app does when pushed).
struct SoakLoad: Sendable {
    let client: SoakHTTP
    let port: Int
    let users: [String]
    let sessions: [String: String]
    let devices: [String: String]
    let pollers: [SoakPoller]
    /// Users who hold streams, and users whose devices only ever sync now and then.
    let streamers: [String]
    let pushOnly: [String]
    let sends: SoakSends
    let stop: SoakStop
    let sendsPerSecond: Int
    let broadcastInterval: Duration

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<2 { group.addTask { await send(seed: UInt64(sender + 1)) } }
            group.addTask { await broadcast() }
            for (index, poller) in pollers.enumerated() { group.addTask { await poll(poller, seed: UInt64(1000 + index)) } }
            for (index, user) in streamers.enumerated() { group.addTask { await stream(user, seed: UInt64(100 + index)) } }
            group.addTask { await syncDevices() }
        }
    }

    private func send(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        let pause = Duration.milliseconds(2000 / max(1, sendsPerSecond))
        var count = 0
        while !stop.isSet {
            let targets = Set((0..<Int(random.next() % 4 + 1)).map { _ in users[Int(random.next() % UInt64(users.count))] })
            count += 1
            let body = SoakHTTP.json([
                "channel_url": "feed", "template_key": "plain", "variables": ["title": "send \(seed)-\(count)"], "targets": Array(targets),
            ])
            if let (status, json) = await client.call("send", .POST, "/v1/notifications", bearer: SoakDeployment.adminToken, body: body),
                status == 201, let id = (json["id"] as? String).flatMap({ Int64($0) })
            {
                sends.add(id, targets: targets)
            }
            try? await Task.sleep(for: pause)
        }
    }

    private func broadcast() async {
        var count = 0
        while !stop.isSet {
            try? await Task.sleep(for: broadcastInterval)
            if stop.isSet { return }
            count += 1
            let body = SoakHTTP.json([
                "channel_url": "feed", "template_key": "plain", "variables": ["title": "broadcast \(count)"], "audience": "all",
            ])
            // 202: the fan-out goes on in the background.
            if let (status, json) = await client.call("broadcast", .POST, "/v1/notifications", bearer: SoakDeployment.adminToken, body: body),
                status == 202, let id = (json["id"] as? String).flatMap({ Int64($0) })
            {
                sends.add(id, targets: nil)
            }
        }
    }

    private func poll(_ poller: SoakPoller, seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        while !stop.isSet {
            if let arrived = await poller.sync(client), !arrived.isEmpty {
                let ids = Array(arrived.prefix(100))
                // Receipts for some, read marks for fewer: both change copies, which come back by
                // their new positions.
                if random.next() % 4 == 0 {
                    _ = await client.call(
                        "delivered",
                        .POST,
                        "/v1/me/delivered",
                        bearer: poller.session,
                        body: SoakHTTP.json(["notification_ids": ids])
                    )
                }
                if random.next() % 8 == 0 {
                    _ = await client.call(
                        "read",
                        .POST,
                        "/v1/me/channels/feed/read",
                        bearer: poller.session,
                        body: SoakHTTP.json(["notification_ids": ids])
                    )
                }
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    private func stream(_ user: String, seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        while !stop.isSet {
            let began = ContinuousClock.now
            do {
                let stream = try await TestStream.open(port: port, session: sessions[user]!, device: devices[user], timeout: .seconds(15))
                client.recorder.record("stream", began: began)
                try? await Task.sleep(for: .seconds(Int(random.next() % 12 + 3)))
                await stream.close()
            } catch {
                client.recorder.record("stream", began: began, failure: "\(error)")
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// A device that syncs after being pushed: a first load naming it answers its push.
    private func syncDevices() async {
        var random = SplitMix64(seed: 7)
        while !stop.isSet {
            let user = pushOnly[Int(random.next() % UInt64(pushOnly.count))]
            _ = await client.call("device sync", .GET, "/v1/me/channels/feed/collection?limit=10&device=\(devices[user]!)", bearer: sessions[user]!)
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
