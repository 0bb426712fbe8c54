import Foundation
import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The user routes the library calls, over the client generated from `openapi.yaml`: every call
/// carries the session (`SessionMiddleware`), turns any answer other than the expected one into a
/// `HeraldClientError`, and hands back the library's own values. Its methods are not isolated to any
/// actor, so decoding and converting answers happens off the main thread.
struct HeraldAPI: Sendable {
    let client: Client
    let credentials: SessionCredentials

    init(
        serverURL: URL,
        credentials: SessionCredentials,
        session: URLSession = .shared,
        log: ClientLog = ClientLog(handler: nil),
        middlewares: [any ClientMiddleware] = []
    ) {
        self.credentials = credentials
        client = Client(
            serverURL: serverURL,
            configuration: Configuration(dateTranscoder: MillisecondDateTranscoder()),
            transport: URLSessionTransport(configuration: .init(session: session)),
            middlewares: [SessionMiddleware(credentials: credentials, log: log)] + middlewares
        )
    }

    /// Runs one generated call and gives back only the library's errors: the runtime wraps whatever a
    /// middleware or the transport throws in its `ClientError`.
    func unwrapping<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as ClientError {
            throw HeraldClientError.from(error.underlyingError)
        } catch {
            throw HeraldClientError.from(error)
        }
    }

    /// A first load (no token) or an incremental sync, naming the device when there is one.
    func sync(channelURL: String, token: String?, limit: Int, category: String?, status: InboxStatus, device: String?) async throws -> SyncAnswer {
        let output = try await unwrapping {
            try await client.syncCollection(
                path: .init(channelUrl: channelURL),
                query: .init(token: token, limit: limit, category: category, status: Self.wire(status)),
                headers: .init(heraldDevice: device)
            )
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return try SyncAnswer(try ok.body.json)
    }

    func older(channelURL: String, before: String, limit: Int, category: String?, status: InboxStatus) async throws -> OlderPage {
        let output = try await unwrapping {
            try await client.olderNotifications(
                path: .init(channelUrl: channelURL),
                query: .init(before: before, limit: limit, category: category, status: Self.wire(status))
            )
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        let page = try ok.body.json
        return OlderPage(notifications: try page.notifications.map(HeraldNotification.init(converting:)), previousCursor: page.prevCursor)
    }

    /// A mark's answer: the state after, and the mark's position (`nil` from a server that sends none).
    static func marked(_ wire: Components.Schemas.ChannelState) -> (state: ChannelState, position: Int64?) {
        (ChannelState(wire), wire.position.flatMap { Int64($0) })
    }

    /// The status as the query sends it: none for the default, as servers before statuses expect.
    static func wire(_ status: InboxStatus) -> Components.Parameters.InboxStatus? {
        status == .inbox ? nil : Components.Parameters.InboxStatus(rawValue: status.rawValue)
    }

    /// The state after the mark, and the mark's position (`nil` from a server that sends none).
    func markRead(channelURL: String, ids: [String]?) async throws -> (state: ChannelState, position: Int64?) {
        // No ids: an empty body, which is what "all" is.
        let output = try await unwrapping {
            try await client.markRead(path: .init(channelUrl: channelURL), body: ids.map { .json(.init(notificationIds: $0)) })
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }

    /// The state after the mark, and the mark's position (`nil` from a server that sends none).
    func markSeen(channelURL: String, at: Date?) async throws -> (state: ChannelState, position: Int64?) {
        let output = try await unwrapping {
            try await client.markSeen(path: .init(channelUrl: channelURL), body: at.map { .json(.init(seenAt: $0)) })
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }

    func unread() async throws -> Operations.UnreadCounts.Output.Ok.Body.JsonPayload {
        let output = try await unwrapping { try await client.unreadCounts() }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return try ok.body.json
    }

    func channels(token: String?, device: String?) async throws -> ChannelPage {
        let output = try await unwrapping { try await client.myChannels(query: .init(token: token), headers: .init(heraldDevice: device)) }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        let page = try ok.body.json
        return ChannelPage(
            isLive: page.isLive,
            nextToken: page.nextToken,
            deleted: page.deleted,
            entries: try (page.chat + page.feed).map(ChannelList.Entry.init)
        )
    }

    func registerDevice(token: String, environment: APNsEnvironment, topic: String, unique: Bool) async throws {
        let output = try await unwrapping {
            try await client.registerDevice(
                path: .init(deviceToken: token),
                body: .json(.init(environment: environment == .production ? .production : .sandbox, topic: topic, unique: unique))
            )
        }
        switch output {
        case .ok, .created: return
        default: throw HeraldClientError.unexpected(output)
        }
    }

    func unregisterDevice(token: String) async throws {
        let output = try await unwrapping { try await client.unregisterDevice(path: .init(deviceToken: token)) }
        switch output {
        case .noContent: return
        case .notFound: return  // already gone: what was asked for is true
        default: throw HeraldClientError.unexpected(output)
        }
    }

    /// A delivery receipt: the `herald` object of the push the device got.
    func markDelivered(herald: Operations.MarkDelivered.Input.Body.JsonPayload.HeraldPayload) async throws -> [String] {
        let output = try await unwrapping { try await client.markDelivered(body: .json(.init(herald: herald))) }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return try ok.body.json.updated
    }

    func logEvents(_ kind: NotificationEvent, ids: [String]) async throws {
        let output = try await unwrapping {
            try await client.logEvents(body: .json(.init(_type: kind == .clicked ? .clicked : .viewed, notificationIds: ids)))
        }
        guard case .noContent = output else { throw HeraldClientError.unexpected(output) }
    }
}

/// A collection answer in the library's values.
struct SyncAnswer: Sendable {
    var isLive: Bool
    var notifications: [HeraldNotification]
    var deleted: [String]
    var nextToken: String?
    var hasMore: Bool
    var previousCursor: String?
    var badge: Int
    /// The position every change below which the answer reflects.
    var horizon: Int64
    var state: ChannelState
    var channel: ChannelInfo

    init(_ wire: Components.Schemas.Collection) throws {
        isLive = wire.isLive
        notifications = try wire.notifications.map(HeraldNotification.init(converting:))
        deleted = wire.deleted
        nextToken = wire.nextToken
        hasMore = wire.hasMore
        previousCursor = wire.prevCursor
        badge = wire.badge
        horizon = Int64(wire.horizon) ?? 0
        state = ChannelState(wire.channel.state)
        channel = ChannelInfo(
            url: wire.channel.channelUrl,
            kind: wire.channel.kind == .chat ? .chat : .feed,
            name: wire.channel.name,
            coverURL: wire.channel.coverUrl,
            customType: wire.channel.customType
        )
    }
}

/// A page of older notifications.
struct OlderPage: Sendable {
    var notifications: [HeraldNotification]
    var previousCursor: String?
}

/// The channel list's answer in the library's values.
struct ChannelPage: Sendable {
    var isLive: Bool
    var nextToken: String?
    var deleted: [String]
    var entries: [ChannelList.Entry]
}

/// Which APNs environment a device token belongs to (a development build's is `sandbox`).
public enum APNsEnvironment: String, Sendable, Codable {
    case sandbox
    case production
}

/// What the user did with a notification, for the server's statistics.
public enum NotificationEvent: String, Sendable {
    case viewed
    case clicked
}
