import Foundation
import HeraldTesting
import NIOHTTP1
import Testing

@testable import HeraldClient

extension ClientSuites {
    /// What the client does with pushes beyond a refresh: the typed payloads, the channels and badge a
    /// refresh push carries, a tapped alert's route, click and read, and the extension's media.
    @Suite("Client push plumbing")
    @MainActor
    struct PushPlumbingTests {
        static let deviceBytes = Data((0..<32).map { UInt8($0 * 3 + 1 & 0xFF) })
        static var deviceHex: String { deviceBytes.map { String(format: "%02x", $0) }.joined() }

        func userInfo(_ world: ServerWorld, type: String) -> [[AnyHashable: Any]] {
            world.mock.requests.filter { $0.deviceToken == Self.deviceHex && $0.status == 200 && $0.headers["apns-push-type"] == type }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]
            }
        }

        /// A refresh push sets the badge it carries at once and refreshes the collections of the
        /// channels it names (and the channel list), not the others.
        @Test func aRefreshPushSetsItsBadgeAndRefreshesTheChannelsItNames() async throws {
            try await ServerWorld.with { world in
                let log = LogRecorder()
                let client = try await world.client("u1") { $0.logHandler = log.handler }
                let platform = TestPlatform()
                client.followLifecycle(of: platform)
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                let feed = await client.collection(channelURL: "feed")
                try await feed.refresh()
                try await client.channels.refresh()
                // Open, never loaded, and of a channel the user has nothing in: no push names it.
                let chat = await client.collection(channelURL: "chat")

                let sent = try await world.send("news", to: ["u1"])
                try await eventually("the refresh push") { userInfo(world, type: "background").count == 1 }
                let push = try #require(userInfo(world, type: "background").first)
                guard case .refresh(let refresh) = try #require(HeraldPush(userInfo: push)) else {
                    Issue.record("not read as a refresh push: \(push)")
                    return
                }
                #expect(refresh.channels == [.init(channelURL: "feed", unreadCount: 1)] && refresh.badge == 1, "\(push)")
                #expect(refresh.notificationID == sent)

                func requests(_ path: String) -> Int {
                    log.entries.filter { $0.message.hasPrefix("request") && $0.message.hasSuffix(path) }.count
                }
                let (feedSyncs, lists) = (requests("/v1/me/channels/feed/collection"), requests("/v1/me/channels"))
                #expect(await client.handleRemoteNotification(push) == .newData)
                #expect(platform.badges.last == 1)
                #expect(feed.notifications.map(\.id) == [sent])
                #expect(requests("/v1/me/channels/feed/collection") == feedSyncs + 1 && requests("/v1/me/channels") == lists + 1)
                #expect(requests("/v1/me/channels/chat/collection") == 0 && !chat.isLive)
            }
        }

        /// A tap on an alert gives the app its channel and notification, logs the click and, when
        /// asked, marks the notification read.
        @Test func aTappedAlertRoutesLogsTheClickAndMarksItRead() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                let chat = await client.collection(channelURL: "chat")
                try await chat.refresh()
                let id = try await world.send("tap me", to: ["u1"], channel: "chat", alert: true)
                try await eventually("the alert push") { !userInfo(world, type: "alert").isEmpty }
                let alert = try #require(userInfo(world, type: "alert").first)
                guard case .alert(let typed) = try #require(HeraldPush(userInfo: alert)) else {
                    Issue.record("not read as an alert: \(alert)")
                    return
                }
                #expect(typed.notificationID == id && typed.channelURL == "chat" && typed.badge == 1)

                let route = await client.handleNotificationResponse(alert, markRead: true)
                #expect(route == NotificationRoute(channelURL: "chat", notificationID: id))
                let view = try await world.admin(.GET, "/v1/notifications/\(id)")
                let counts = view["counts"] as? [String: Any]
                #expect(counts?["clicked"] as? Int == 1 && counts?["read"] as? Int == 1)
                #expect(chat.notifications.first?.status == .read && client.unread.total == 0)
                // Not Herald's alert: no route, nothing asked of the server.
                #expect(await client.handleNotificationResponse(["aps": ["alert": "x"]]) == nil)
            }
        }

        /// An alert whose notification has a `media_url` lists it in `files`; the extension's helper
        /// downloads it within its deadline into a file iOS can attach.
        @Test func theExtensionDownloadsTheAlertsMedia() async throws {
            try await ServerWorld.with { world in
                let client = try await world.client("u1")
                try await client.registerDevice(token: Self.deviceBytes, environment: .sandbox, topic: ServerWorld.topic)
                try await world.admin(
                    .PUT,
                    "/v1/templates/picture",
                    #"{"name":"Picture","variables":[{"name":"url","type":"string","required":true}],"data":{"title":"look","media_url":"{{url}}"},"push_body":"look"}"#
                )
                let media = "\(world.serverURL.absoluteString)/console/assets/favicon.svg"
                try await world.admin(
                    .POST,
                    "/v1/notifications",
                    #"{"channel_url":"chat","template_key":"picture","targets":["u1"],"variables":{"url":"\#(media)"},"push":{"alert":true}}"#
                )
                try await eventually("the alert push") { !userInfo(world, type: "alert").isEmpty }
                let payload = try #require(userInfo(world, type: "alert").first)
                guard case .alert(let alert) = try #require(HeraldPush(userInfo: payload)) else {
                    Issue.record("not an alert")
                    return
                }
                #expect(alert.mediaURLs == [URL(string: media)!])
                let file = try await NotificationMedia.download(alert.mediaURLs[0], timeout: .seconds(10))
                defer { try? FileManager.default.removeItem(at: file) }
                #expect(file.pathExtension == "svg")
                #expect(try Data(contentsOf: file).starts(with: Data("<svg".utf8)))
                // A media URL that answers 404 is an error, not an empty attachment.
                await #expect(throws: HeraldClientError.self) {
                    try await NotificationMedia.download(URL(string: "\(world.serverURL.absoluteString)/console/assets/none.png")!)
                }
            }
        }
    }
}
