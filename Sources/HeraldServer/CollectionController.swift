import Foundation
import HeraldCore
import HeraldStore
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOConcurrencyHelpers

/// How the sync protocol is tuned.
public struct SyncSettings: Sendable {
    /// More pending changes than this and a token is no longer live (`is_live: false`).
    public var hugeGap: Int

    public init(hugeGap: Int = 300) {
        self.hugeGap = hugeGap
    }
}

/// The user's routes for their collections: initial load and incremental sync, older pages, read and
/// seen marks, unread counts. Every route acts for the session's own user only.
struct CollectionController: Sendable {
    let collections: CollectionStore
    let settings: SettingsStore
    let sync: SyncSettings
    let push: PushStore
    let devices: DeviceStore
    let tokenKey = TokenKeyCache()

    static let defaultLimit = 30
    static let maximumLimit = 100
    static let maximumReadIDs = 100

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/me/channels/{channel_url}/collection", access: .user, companion: pollCompanion) { request, context in
            try await collection(request, context: context)
        }
        routes.add(.get, "/v1/me/channels/{channel_url}/notifications", access: .user, companion: Self.channelCompanion) { request, context in
            try await olderPage(request, context: context)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/read", access: .user, companion: Self.channelCompanion) { request, context in
            try await read(request, context: context)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/seen", access: .user, companion: Self.channelCompanion) { request, context in
            try await seen(request, context: context)
        }
        routes.add(.get, "/v1/me/channels", access: .user) { request, context in
            try await channelList(request, context: context)
        }
        routes.add(.post, "/v1/users/{user_id}/channels/{channel_url}/reset", access: .admin) { _, context in
            let userID = try context.parameters.require("user_id")
            guard UserID.problem(with: userID) == nil, let userKey = try await collections.userKey(userID) else {
                throw APIError(.notFound, code: "user_not_found", message: "No user with this id.")
            }
            let channel = try await Self.channel(context, collections)
            try await collections.reset(userKey: userKey, channelKey: channel.key)
            return Response(status: .noContent)
        }
        routes.add(.get, "/v1/me/unread", access: .user) { _, context in
            let user = try Self.user(context)
            let unread = try await collections.unread(userKey: user.key)
            return UnreadBody(total: unread.total, channels: unread.channels.map { .init(channelURL: $0.url, unreadCount: $0.unread) })
        }
    }

    // MARK: - Collection

    func collection(_ request: Request, context: HeraldRequestContext) async throws -> CollectionBody {
        let user = try Self.user(context)
        let query = request.uri.queryParameters
        let limit = try Self.limit(query)
        let category = try Self.category(query)
        let key = try await tokenKey.get(settings)
        let device = try DeviceNaming.reference(in: request)
        guard let tokenText = query["token"].map(String.init) else {
            let channel = try await Self.channel(context, collections)
            // Refused before the channel is marked opened, so that a refused load changes nothing.
            if let device, try await devices.find(userKey: user.key, reference: device) == nil { throw DeviceNaming.notFound }
            try await collections.open(userKey: user.key, channelKey: channel.key)
            let (snapshot, page) = try await collections.load(userKey: user.key, channelKey: channel.key, category: category, limit: limit + 1)
            // Everything below the horizon is in this snapshot; later changes come incrementally.
            let token = SyncToken(
                userKey: user.key, channelKey: channel.key, resetCount: snapshot.state.resetCount, category: category,
                position: .through(xid: snapshot.horizon - 1)
            )
            var body = CollectionBody(channel: channel, snapshot: snapshot, isLive: true)
            for item in page.prefix(limit) { body.notifications.append(NotificationItem(item)) }
            body.prevCursor = page.count > limit ? page[limit - 1].id.description : nil
            body.nextToken = token.encoded(key: key)
            try await deviceSynced(device, user: user, horizon: snapshot.horizon)
            return body
        }
        // A token that does not even parse needs no database work beyond the state in the answer.
        let token = SyncToken(decoding: tokenText, key: key)
        let url = try context.parameters.require("channel_url")
        guard Channel.urlProblem(url) == nil else { throw Self.channelNotFound }
        let asked = CollectionStore.PollRequest(
            userKey: user.key, channelURL: url, category: category, after: token?.position ?? .through(xid: 0), limit: token == nil ? 0 : limit + 1
        )
        let poll: CollectionStore.Poll?
        if let rows = context.companionAnswer?.rows(for: asked) {
            poll = try CollectionStore.decodePoll(rows)
        } else {
            poll = try await collections.poll(asked)
        }
        guard let poll else { throw Self.channelNotFound }
        let (channel, snapshot, changes) = (poll.channel, poll.snapshot, poll.changes)
        try await deviceSynced(device, user: user, horizon: snapshot.horizon)
        var body = CollectionBody(channel: channel, snapshot: snapshot, isLive: false)
        guard let token,
            token.userKey == user.key, token.channelKey == channel.key,
            token.filter == SyncToken.filterHash(category),
            token.resetCount == snapshot.state.resetCount,
            token.position.xid >= snapshot.compactedThrough,
            token.position.xid < snapshot.nextXID
        else { return body }
        // More changes than the threshold in hand, or a full page that may hide more: only then is a
        // (bounded) count needed.
        if changes.count > sync.hugeGap { return body }
        if changes.count > limit {
            let pending = try await collections.pendingChanges(
                userKey: user.key, channelKey: channel.key, after: token.position, horizon: snapshot.horizon, cap: sync.hugeGap + 1
            )
            guard pending <= sync.hugeGap else { return body }
        }
        body.hasMore = changes.count > limit
        body.isLive = true
        var reached = token.position
        for (changePosition, change) in changes.prefix(limit) {
            reached = changePosition
            switch change {
            case .upserted(let item): body.notifications.append(NotificationItem(item))
            case .deleted(let id): body.deleted.append(String(id))
            }
        }
        // A complete answer moves the token up to the horizon, so a quiet client never falls behind
        // the retained history.
        if !body.hasMore { reached = max(reached, .through(xid: snapshot.horizon - 1)) }
        var next = token
        next.position = reached
        body.nextToken = next.encoded(key: key)
        return body
    }

    // MARK: - Channel list

    /// The whole list (no token), or its change log since the token: the entries that changed, whole,
    /// and the URLs of the channels that left the list. A token that cannot continue — malformed,
    /// forged, another user's or another kind, from the future, or older than the retained history —
    /// answers `is_live: false` and nothing else; the client loads the list afresh.
    func channelList(_ request: Request, context: HeraldRequestContext) async throws -> ChannelListBody {
        let user = try Self.user(context)
        let key = try await tokenKey.get(settings)
        // A list that names its device answers its refresh push like a collection sync: a push about a
        // deleted channel can only be answered here (its collection is gone).
        let device = try DeviceNaming.reference(in: request)
        guard let tokenText = request.uri.queryParameters["token"] else {
            let list = try await collections.channelList(userKey: user.key)
            try await deviceSynced(device, user: user, horizon: list.horizon)
            return ChannelListBody(list, nextToken: ChannelListToken(userKey: user.key, horizon: list.horizon).encoded(key: key))
        }
        guard let token = ChannelListToken(decoding: String(tokenText), key: key), token.userKey == user.key else {
            try await deviceKnown(device, user: user)
            return ChannelListBody()
        }
        let list = try await collections.channelList(userKey: user.key, changedSince: token.horizon)
        guard token.horizon >= list.compactedThrough, token.horizon <= list.nextXID else {
            try await deviceKnown(device, user: user)
            return ChannelListBody()
        }
        try await deviceSynced(device, user: user, horizon: list.horizon)
        // Never backwards, should a snapshot ever see an older horizon than the token's.
        let next = ChannelListToken(userKey: user.key, horizon: max(token.horizon, list.horizon))
        return ChannelListBody(list, nextToken: next.encoded(key: key))
    }

    /// The incremental poll a request's sync token asks for, to be sent with the session check (see
    /// `SessionCompanion`): the token is signed, so the user key in it is one this server issued, and
    /// the registry hands the rows over only if the session turns out to be that user's. Built exactly
    /// as `collection` builds its own request, so that the two compare equal. A first load (no token)
    /// sends its channel lookup instead.
    @Sendable func pollCompanion(_ request: Request, context: HeraldRequestContext) async -> SessionCompanion? {
        let query = request.uri.queryParameters
        guard let tokenText = query["token"] else { return Self.channelCompanion(request, context: context) }
        // (Not `try?` for the category: it would flatten "no category" into "no companion".)
        guard let limit = try? Self.limit(query),
            case .success(let category) = Result(catching: { try Self.category(query) }),
            let key = try? await tokenKey.get(settings), let token = SyncToken(decoding: String(tokenText), key: key),
            let url = context.parameters.get("channel_url"), Channel.urlProblem(url) == nil
        else { return nil }
        let poll = CollectionStore.PollRequest(userKey: token.userKey, channelURL: url, category: category, after: token.position, limit: limit + 1)
        return SessionCompanion(userKey: token.userKey, query: CollectionStore.pollQuery(poll), question: poll)
    }

    /// A sync that names its device (`DeviceNaming`) answers that device's outstanding refresh push and
    /// every refresh want its snapshot covers (see `PushStore.markSynced`).
    func deviceSynced(_ device: DeviceReference?, user: AuthenticatedUser, horizon: Int64) async throws {
        guard let device else { return }
        guard try await push.markSynced(userKey: user.key, device: device, horizon: horizon) else { throw DeviceNaming.notFound }
    }

    /// An answer that does not count as a sync (a list token that cannot continue) still refuses a
    /// device that is not the caller's, as every other answer does.
    func deviceKnown(_ device: DeviceReference?, user: AuthenticatedUser) async throws {
        guard let device else { return }
        guard try await devices.find(userKey: user.key, reference: device) != nil else { throw DeviceNaming.notFound }
    }

    func olderPage(_ request: Request, context: HeraldRequestContext) async throws -> PageBody {
        let user = try Self.user(context)
        let channel = try await Self.channel(context, collections)
        let query = request.uri.queryParameters
        let limit = try Self.limit(query)
        let category = try Self.category(query)
        var before: Int64?
        if let text = query["before"] {
            guard let value = CanonicalInteger.id(text) else {
                throw APIError(.badRequest, code: "invalid_before", message: "before must be a notification id (the prev_cursor of a page).")
            }
            before = value
        }
        let page = try await collections.page(userKey: user.key, channelKey: channel.key, category: category, before: before, limit: limit + 1)
        var body = PageBody(prevCursor: page.count > limit ? page[limit - 1].id.description : nil)
        for item in page.prefix(limit) { body.notifications.append(NotificationItem(item)) }
        return body
    }

    // MARK: - Marks

    struct ReadRequest: Decodable {
        var notificationIDs: [String]?

        enum CodingKeys: String, CodingKey {
            case notificationIDs = "notification_ids"
        }
    }

    func read(_ request: Request, context: HeraldRequestContext) async throws -> StateBody {
        let user = try Self.user(context)
        let channel = try await Self.channel(context, collections)
        let body = try await RequestBody.decode(ReadRequest.self, from: request, context: context)
        var ids: [Int64]?
        if let given = body?.notificationIDs {
            guard (1...Self.maximumReadIDs).contains(given.count) else {
                throw APIError(
                    .badRequest, code: "invalid_notification_ids",
                    message: "notification_ids must list 1–\(Self.maximumReadIDs) notification ids; send no body to mark all read."
                )
            }
            ids = try given.enumerated().map { index, text in
                guard let id = CanonicalInteger.id(text) else {
                    throw APIError(.badRequest, code: "invalid_notification_ids", message: "notification_ids[\(index)] is not a notification id.")
                }
                return id
            }
        }
        let state = try await collections.markRead(userKey: user.key, channelKey: channel.key, ids: ids)
        return StateBody(state)
    }

    struct SeenRequest: Decodable {
        var seenAt: String?

        enum CodingKeys: String, CodingKey {
            case seenAt = "seen_at"
        }
    }

    func seen(_ request: Request, context: HeraldRequestContext) async throws -> StateBody {
        let user = try Self.user(context)
        let channel = try await Self.channel(context, collections)
        var at = Date()
        if let text = try await RequestBody.decode(SeenRequest.self, from: request, context: context)?.seenAt {
            guard let parsed = RFC3339.date(from: text), parsed <= at.addingTimeInterval(60) else {
                throw APIError(.badRequest, code: "invalid_seen_at", message: "seen_at must be an RFC 3339 date-time, not in the future.")
            }
            at = parsed
        }
        return StateBody(try await collections.markSeen(userKey: user.key, channelKey: channel.key, at: at))
    }

    // MARK: - Helpers

    static func user(_ context: HeraldRequestContext) throws -> AuthenticatedUser {
        guard let user = context.user else { throw APIError.internalError }
        return user
    }

    /// The channel the path names; from the rows of `channelCompanion` when they came with the session
    /// check.
    static func channel(_ context: HeraldRequestContext, _ collections: CollectionStore) async throws -> CollectionChannel {
        let url = try context.parameters.require("channel_url")
        guard Channel.urlProblem(url) == nil else { throw channelNotFound }
        let channel: CollectionChannel?
        if let rows = context.companionAnswer?.rows(for: ChannelLookup(url: url)) {
            channel = try CollectionStore.decodeChannelLookup(rows)
        } else {
            channel = try await collections.channel(url)
        }
        guard let channel else { throw channelNotFound }
        return channel
    }

    /// The channel lookup of the path's URL, to be sent with the session check: it reads nothing of any
    /// user's, so any live session may use its answer.
    @Sendable static func channelCompanion(_ request: Request, context: HeraldRequestContext) -> SessionCompanion? {
        guard let url = context.parameters.get("channel_url"), Channel.urlProblem(url) == nil else { return nil }
        return SessionCompanion(userKey: nil, query: CollectionStore.channelQuery(url), question: ChannelLookup(url: url))
    }

    /// What a channel companion asked (its own type, so that it never passes for another question).
    struct ChannelLookup: Hashable, Sendable {
        var url: String
    }

    static let channelNotFound = APIError(.notFound, code: "channel_not_found", message: "No channel with this URL.")

    static func limit(_ query: FlatDictionary<Substring, Substring>) throws -> Int {
        try PageRequest(query: query, maximum: maximumLimit, default: defaultLimit).limit
    }

    static func category(_ query: FlatDictionary<Substring, Substring>) throws -> String? {
        guard let text = query["category"] else { return nil }
        guard (1...64).contains(text.count) else {
            throw APIError(.badRequest, code: "invalid_category", message: "category must be 1–64 characters.")
        }
        return String(text)
    }
}

/// The sync token key, read from the database once per process.
final class TokenKeyCache: Sendable {
    private let key = NIOLockedValueBox<[UInt8]?>(nil)

    func get(_ settings: SettingsStore) async throws -> [UInt8] {
        if let cached = key.withLockedValue({ $0 }) { return cached }
        let loaded = try await settings.syncTokenKey()
        key.withLockedValue { $0 = loaded }
        return loaded
    }
}
