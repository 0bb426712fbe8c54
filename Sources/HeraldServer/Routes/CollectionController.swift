import Foundation
import HTTPTypes
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird
import HummingbirdCore

/// The user's routes for their collections: initial load and incremental sync, older pages, read and
/// seen marks, unread counts. Every route acts for the session's own user only.
struct CollectionController: Sendable {
    let collections: CollectionStore
    let users: UserStore
    let settings: SettingsStore
    let sync: SyncSettings
    let push: PushStore
    let devices: DeviceStore
    let sessions: SessionStore
    /// Answers quiet polls from memory; `nil` asks the database every time.
    var notifier: ChangeNotifier?
    let tokenKey = TokenKeyCache()

    static let defaultLimit = 30
    static let maximumLimit = 100
    static let maximumReadIDs = 100

    func register(in routes: RouteRegistry) {
        let settings = self.settings
        let tokenKey = self.tokenKey
        routes.add(.get, "/v1/me/channels/{channel_url}/collection", reads: .standby) { request, context in
            try await CollectionInput(parsing: request, context: context) { try await tokenKey.get(settings) }
        } use: { request, context, input, answer in
            try await collectionAnswer(request, input, answer: answer, context: context)
        }
        routes.add(.get, "/v1/me/channels/{channel_url}/notifications", reads: .standby, parse: ChannelInput.init) {
            request,
            context,
            input,
            answer in
            try await olderPage(request, input, answer: answer, context: context)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/read", parse: ChannelInput.init) { request, context, input, answer in
            try await read(request, channel: try await Self.channel(input, answer: answer, collections), context: context)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/seen", parse: ChannelInput.init) { request, context, input, answer in
            try await seen(request, channel: try await Self.channel(input, answer: answer, collections), context: context)
        }
        registerInboxStates(in: routes)
        routes.add(.get, "/v1/me/channels", access: .user, reads: .standby) { request, context in
            try await channelListAnswer(request, context: context)
        }
        routes.add(.post, "/v1/users/{user_id}/channels/{channel_url}/reset", access: .admin) { _, context in
            // Percent-decoded and checked like every `{user_id}`: `a%2Fb` is the user `a/b`.
            let userID = try UsersController.userID(context)
            guard let userKey = try await users.key(userID) else {
                throw APIError(.notFound, code: "user_not_found", message: "No user with this id.")
            }
            guard let channel = try await collections.channel(try Self.channelURL(context)) else { throw Self.channelNotFound }
            try await collections.reset(userKey: userKey, channelKey: channel.key)
            return Response(status: .noContent)
        }
        routes.add(.get, "/v1/me/unread", access: .user, reads: .standby) { _, context in
            let user = try Self.user(context)
            let unread = try await context.reads.read { try await reader($0).unread(userKey: user.key) }
            return UnreadBody(
                total: unread.total,
                channels: unread.channels.map { .init(channelURL: $0.url, unreadCount: $0.unread) },
                horizon: String(unread.horizon)
            )
        }
    }

    /// The store a read goes to: the standby's when it reads there (see `RequestReads`), else the
    /// primary's.
    func reader(_ standby: ReadReplica?) -> CollectionStore {
        standby.map { CollectionStore(client: $0.client) } ?? collections
    }

    /// Reads the channel the request names: on its first try, the lookup's answer when it came with
    /// the session check (from where the request read then).
    func channel(_ url: String, answered: CollectionChannel??, context: HeraldRequestContext) async throws -> CollectionChannel {
        var answered = answered
        return try await context.reads.read { standby in
            defer { answered = nil }
            let channel: CollectionChannel?
            if let answer = answered { channel = answer } else { channel = try await reader(standby).channel(url) }
            guard let channel else { throw Self.channelNotFound }
            return channel
        }
    }

    // MARK: - Collection

    /// The route's answer: `collection`'s, or for a long poll whose answer is quiet, that answer held
    /// back until a change may have reached the collection (then read again) or the time runs out.
    /// Without memory answers (whose hints tell of changes) it answers at once.
    func collectionAnswer(
        _ request: Request,
        _ input: CollectionInput,
        answer: CollectionInput.Answer?,
        context: HeraldRequestContext
    ) async throws -> LongPollAnswer<CollectionBody> {
        let (body, quietIn) = try await collection(input, answer: answer, context: context)
        guard input.wait > .zero, let notifier, let channelKey = quietIn, let user = context.user else { return .now(body) }
        return .later {
            let outcome = await notifier.waitForChange(userKey: user.key, channelKey: channelKey, horizon: body.horizon, timeout: input.wait)
            guard case .changed = outcome, await sessionStillLive(request) else { return body }
            var again = input
            again.wait = .zero
            return (try? await collection(again, answer: nil, context: context).body) ?? body
        }
    }

    /// The answer to a collection request, and — when it is a live answer with nothing to send — the
    /// key of its channel (a long poll may wait on it).
    func collection(
        _ input: CollectionInput,
        answer: CollectionInput.Answer?,
        context: HeraldRequestContext
    ) async throws -> (body: CollectionBody, quietIn: Int64?) {
        let user = try Self.user(context)
        let (limit, filter, device) = (input.limit, input.filter, input.device)
        let token: SyncToken?
        switch input.token {
        case .none:
            let answered: CollectionChannel?? = if case .channel(let channel) = answer { .some(channel) } else { nil }
            let channel = try await self.channel(input.url, answered: answered, context: context)
            // Refused before the channel is marked opened, so that a refused load changes nothing.
            if let device, try await devices.find(userKey: user.key, reference: device) == nil { throw DeviceNaming.notFound }
            try await collections.open(userKey: user.key, channelKey: channel.key)
            let (snapshot, page) = try await context.reads.read { standby in
                try await reader(standby).load(userKey: user.key, channelKey: channel.key, filter: filter, limit: limit + 1)
            }
            var body = CollectionBody(channel: channel, snapshot: snapshot, isLive: true)
            for item in page.prefix(limit) { body.notifications.append(NotificationItem(item)) }
            body.prevCursor = page.count > limit ? page[limit - 1].id.description : nil
            body.nextToken = CollectionSync.firstToken(userKey: user.key, channelKey: channel.key, filter: filter, snapshot: snapshot)
                .encoded(key: input.key)
            // Not kept for memory: the channel was read by an earlier statement than the snapshot, so
            // a change to it in between (below the horizon) would go unnoticed. The first poll keeps
            // its answer (one statement).
            try await deviceSynced(device, user: user, horizon: snapshot.horizon)
            return (body, nil)
        case .invalid: token = nil
        case .valid(let valid, let presented):
            token = valid
            // Unless the database's answer came with the session check, memory may know it already.
            if answer == nil,
                let quiet = notifier?.quietPoll(userKey: user.key, channelURL: input.url, filter: filter, token: valid, device: device)
            {
                var body = CollectionBody(channel: quiet.channel, snapshot: quiet.snapshot, isLive: true)
                // The token as presented: an answer from memory never moves it (and sealing it anew
                // would only cost an HMAC).
                body.nextToken = presented
                return (body, quiet.channel.key)
            }
        }
        // A token that does not even parse needs no database work beyond the state in the answer.
        var answered: CollectionStore.Poll?? = if case .poll(let poll) = answer { .some(poll) } else { nil }
        let (poll, standbyBehind) = try await context.reads.read { standby in
            defer { answered = nil }
            let poll: CollectionStore.Poll?
            if let answer = answered { poll = answer } else { poll = try await reader(standby).poll(input.poll(token, userKey: user.key)) }
            guard let poll else { throw Self.channelNotFound }
            guard let standby, let token, poll.snapshot.horizon <= token.position.xid, token.userKey == user.key,
                token.channelKey == poll.channel.key, token.filter == filter.hash
            else { return (poll, false) }
            // The standby has not replayed as far as the token has seen: nothing new yet, and the
            // token stays where it is. (The other checks of `CollectionSync.continues` compare the
            // token with state the standby may not have replayed either; they wait for it too.)
            try standby.behind(token.position.xid)
            return (poll, true)
        }
        try await deviceSynced(device, user: user, horizon: poll.snapshot.horizon)
        var body = CollectionBody(channel: poll.channel, snapshot: poll.snapshot, isLive: false)
        if standbyBehind, let token {
            body.isLive = true
            body.nextToken = token.encoded(key: input.key)
            return (body, nil)
        }
        let rules = CollectionSync(hugeGap: sync.hugeGap, limit: limit)
        let page = try await rules.page(after: token, userKey: user.key, filter: filter, poll: poll) { cap in
            try await context.reads.read { standby in
                try await reader(standby).pendingChanges(
                    userKey: user.key,
                    channelKey: poll.channel.key,
                    after: token?.position ?? .through(xid: 0),
                    horizon: poll.snapshot.horizon,
                    cap: cap
                )
            }
        }
        guard let page else { return (body, nil) }
        if !page.hasMore { remember(channel: poll.channel, filter: filter, snapshot: poll.snapshot, from: page.next.position, user: user) }
        body.isLive = true
        body.hasMore = page.hasMore
        for (_, change) in page.changes {
            switch change {
            case .upserted(let item): body.notifications.append(NotificationItem(item))
            case .deleted(let id): body.deleted.append(String(id))
            }
        }
        body.nextToken = page.next.encoded(key: input.key)
        return (body, page.changes.isEmpty && !page.hasMore ? poll.channel.key : nil)
    }

    // MARK: - Channel list

    /// The whole list (no token), or its change log since the token: the entries that changed, whole,
    /// and the URLs of the channels that left the list. A token that cannot continue — malformed,
    /// forged, another user's or another kind, from the future, or older than the retained history —
    /// answers `is_live: false` and nothing else; the client loads the list afresh.
    /// The route's answer: `channelList`'s, or for a long poll whose change log is empty, that answer
    /// held back until a change may have reached the list (then read again) or the time runs out.
    func channelListAnswer(_ request: Request, context: HeraldRequestContext) async throws -> LongPollAnswer<ChannelListBody> {
        let wait = try Self.wait(request.uri.queryParameters)
        let (body, quietFrom) = try await channelList(request, context: context)
        guard wait > .zero, let notifier, let horizon = quietFrom, let user = context.user else { return .now(body) }
        return .later {
            let outcome = await notifier.waitForChange(userKey: user.key, channelKey: nil, horizon: horizon, timeout: wait)
            guard case .changed = outcome, await sessionStillLive(request) else { return body }
            return (try? await channelList(request, context: context).body) ?? body
        }
    }

    /// Whether the request's session is still live: a long poll's wait may have ended with its
    /// revocation, and what it read after that would go to a client no longer signed in.
    func sessionStillLive(_ request: Request) async -> Bool {
        guard let token = try? Authenticator.sessionToken(request) else { return false }
        if notifier?.session(userID: token.userID, hash: token.hash) != nil { return true }
        return (try? await sessions.authenticate(token)) != nil
    }

    /// The list or its change log, and — when the change log is empty — the horizon of its snapshot (a
    /// long poll may wait from there).
    func channelList(_ request: Request, context: HeraldRequestContext) async throws -> (body: ChannelListBody, quietFrom: Int64?) {
        let user = try Self.user(context)
        let key = try await tokenKey.get(settings)
        // A list that names its device answers its refresh push like a collection sync: a push about a
        // deleted channel can only be answered here (its collection is gone).
        let device = try DeviceNaming.reference(in: request)
        guard let tokenText = request.uri.queryParameters["token"] else {
            let list = try await context.reads.read { try await reader($0).channelList(userKey: user.key) }
            try await deviceSynced(device, user: user, horizon: list.horizon)
            return (ChannelListBody(list, nextToken: ChannelListToken(userKey: user.key, horizon: list.horizon).encoded(key: key)), nil)
        }
        guard let token = ChannelListToken(decoding: String(tokenText), key: key), token.userKey == user.key else {
            try await deviceKnown(device, user: user)
            return (ChannelListBody(), nil)
        }
        let (list, standbyBehind) = try await context.reads.read { standby in
            let list = try await reader(standby).channelList(userKey: user.key, changedSince: token.horizon)
            guard let standby, list.horizon < token.horizon else { return (list, false) }
            // The standby has not replayed as far as the token has seen: the change log is empty, and
            // the token stays where it is (below).
            try standby.behind(token.horizon - 1)
            return (list, true)
        }
        if !standbyBehind {
            guard token.horizon >= list.compactedThrough, token.horizon <= list.nextXID else {
                try await deviceKnown(device, user: user)
                return (ChannelListBody(), nil)
            }
        }
        try await deviceSynced(device, user: user, horizon: list.horizon)
        // Never backwards, should a snapshot ever see an older horizon than the token's.
        let next = ChannelListToken(userKey: user.key, horizon: max(token.horizon, list.horizon))
        return (ChannelListBody(list, nextToken: next.encoded(key: key)), list.entries.isEmpty && list.removed.isEmpty ? list.horizon : nil)
    }

    /// A sync that names its device (`DeviceNaming`) answers that device's outstanding refresh push and
    /// every refresh want its snapshot covers (see `PushStore.markSynced`).
    func deviceSynced(_ device: DeviceReference?, user: AuthenticatedUser, horizon: Int64) async throws {
        guard let device else { return }
        guard let synced = try await push.markSynced(userKey: user.key, device: device, horizon: horizon) else { throw DeviceNaming.notFound }
        notifier?.remember(syncedDevice: device, userKey: user.key, horizon: synced)
    }

    /// Keeps a complete answer of the database's for memory to give again (see `ChangeNotifier`).
    func remember(
        channel: CollectionChannel,
        filter: CollectionFilter,
        snapshot: CollectionStore.Snapshot,
        from: ChangePosition,
        user: AuthenticatedUser
    ) {
        guard let notifier else { return }
        let poll = QuietPoll(channel: channel, filter: filter, snapshot: snapshot, from: from)
        notifier.remember(poll: poll, userKey: user.key, channelURL: channel.url)
    }

    /// An answer that does not count as a sync (a list token that cannot continue) still refuses a
    /// device that is not the caller's, as every other answer does.
    func deviceKnown(_ device: DeviceReference?, user: AuthenticatedUser) async throws {
        guard let device else { return }
        guard try await devices.find(userKey: user.key, reference: device) != nil else { throw DeviceNaming.notFound }
    }

    func olderPage(_ request: Request, _ input: ChannelInput, answer: CollectionChannel??, context: HeraldRequestContext) async throws -> PageBody {
        let user = try Self.user(context)
        // An unknown channel is a 404 before anything about the query is judged.
        let channel = try await channel(input.url, answered: answer, context: context)
        let query = request.uri.queryParameters
        let limit = try Self.limit(query)
        let filter = try Self.filter(query)
        var before: Int64?
        if let text = query["before"] {
            guard let value = CanonicalInteger.id(text) else {
                throw APIError(.badRequest, code: "invalid_before", message: "before must be a notification id (the prev_cursor of a page).")
            }
            before = value
        }
        let page = try await context.reads.read { standby in
            try await reader(standby).page(userKey: user.key, channelKey: channel.key, filter: filter, before: before, limit: limit + 1)
        }
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

    func read(_ request: Request, channel: CollectionChannel, context: HeraldRequestContext) async throws -> StateBody {
        let user = try Self.user(context)
        let body = try await RequestBody.decode(ReadRequest.self, from: request, context: context)
        let ids = try body?.notificationIDs.map { try Self.notificationIDs($0, otherwise: "send no body to mark all read") }
        let marked = try await collections.markRead(userKey: user.key, channelKey: channel.key, ids: ids)
        return StateBody(marked.state, position: marked.position)
    }

    struct SeenRequest: Decodable {
        var seenAt: String?

        enum CodingKeys: String, CodingKey {
            case seenAt = "seen_at"
        }
    }

    func seen(_ request: Request, channel: CollectionChannel, context: HeraldRequestContext) async throws -> StateBody {
        let user = try Self.user(context)
        var at = Date()
        if let text = try await RequestBody.decode(SeenRequest.self, from: request, context: context)?.seenAt {
            guard let parsed = RFC3339.date(from: text), parsed <= at.addingTimeInterval(60) else {
                throw APIError(.badRequest, code: "invalid_seen_at", message: "seen_at must be an RFC 3339 date-time, not in the future.")
            }
            at = parsed
        }
        let marked = try await collections.markSeen(userKey: user.key, channelKey: channel.key, at: at)
        return StateBody(marked.state, position: marked.position)
    }

    // MARK: - Helpers

    /// `notification_ids` of a mark's body: 1–100 notification ids; `otherwise` says what else the
    /// route takes.
    static func notificationIDs(_ given: [String], otherwise: String) throws -> [Int64] {
        guard (1...Self.maximumReadIDs).contains(given.count) else {
            throw APIError(
                .badRequest,
                code: "invalid_notification_ids",
                message: "notification_ids must list 1–\(Self.maximumReadIDs) notification ids; \(otherwise)."
            )
        }
        return try given.enumerated().map { index, text in
            guard let id = CanonicalInteger.id(text) else {
                throw APIError(.badRequest, code: "invalid_notification_ids", message: "notification_ids[\(index)] is not a notification id.")
            }
            return id
        }
    }

    static func user(_ context: HeraldRequestContext) throws -> AuthenticatedUser {
        guard let user = context.user else { throw APIError.internalError }
        return user
    }

    /// The channel the path names, read on the primary: the lookup's answer when it came with the
    /// session check.
    static func channel(_ input: ChannelInput, answer: CollectionChannel??, _ collections: CollectionStore) async throws -> CollectionChannel {
        let channel: CollectionChannel?
        if let answer { channel = answer } else { channel = try await collections.channel(input.url) }
        guard let channel else { throw channelNotFound }
        return channel
    }

    /// The path's channel URL; one that no channel could have is not found.
    static func channelURL(_ context: HeraldRequestContext) throws -> String {
        let url = try context.parameters.require("channel_url")
        guard Channel.urlProblem(url) == nil else { throw channelNotFound }
        return url
    }

    static let channelNotFound = APIError(.notFound, code: "channel_not_found", message: "No channel with this URL.")

    static func limit(_ query: FlatDictionary<Substring, Substring>) throws -> Int {
        try PageRequest(query: query, maximum: maximumLimit, default: defaultLimit).limit
    }

    /// The longest `?wait=` a long poll may ask for, in seconds.
    /// Below the 60 s idle timeouts common in front of servers (nginx's `proxy_read_timeout`, load
    /// balancers'): the status line goes out when the wait starts, the body when it ends.
    static let maximumWait = 50

    static func wait(_ query: FlatDictionary<Substring, Substring>) throws -> Duration {
        guard let text = query["wait"] else { return .zero }
        guard let seconds = CanonicalInteger.parse(text), (0...Int64(maximumWait)).contains(seconds) else {
            throw APIError(.badRequest, code: "invalid_wait", message: "wait must be a whole number of seconds from 0 to \(maximumWait).")
        }
        return .seconds(seconds)
    }

    /// The collection's filter: `?category=` (1–64 characters) and `?status=` (`inbox`, the default:
    /// not archived; `unread`, `read`, `archived`, `all`).
    static func filter(_ query: FlatDictionary<Substring, Substring>) throws -> CollectionFilter {
        var filter = CollectionFilter()
        if let text = query["category"] {
            guard (1...64).contains(text.count) else {
                throw APIError(.badRequest, code: "invalid_category", message: "category must be 1–64 characters.")
            }
            filter.category = String(text)
        }
        if let text = query["status"] {
            guard let status = CollectionFilter.Status(rawValue: String(text)) else {
                throw APIError(.badRequest, code: "invalid_status", message: "status must be inbox, unread, read, archived or all.")
            }
            filter.status = status
        }
        return filter
    }
}
