import Foundation
import HTTPTypes
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird
import Metrics
import Postgres

/// Admin routes for sending notifications and changing them afterwards.
struct NotificationsController: Sendable {
    let notifications: NotificationStore
    let channels: ChannelStore
    let templates: TemplateStore
    /// Profiles for templates that read the recipient's (`{{user.nickname}}`).
    let users: UserStore
    /// Wakes the fan-out service after a broadcast (`audience: "all"` or a topic).
    let fanoutWake: WakeSignal

    /// Request bodies of these routes may list 10,000 users with their variables: 8 MiB.
    static let maximumBodySize = 8 << 20

    func register(in routes: RouteRegistry) {
        routes.add(.post, "/v1/notifications", access: .admin) { request, context in
            try await send(request, context: context)
        }
        routes.add(.get, "/v1/notifications/{notification_id}", access: .admin) { request, context in
            let id = try Self.notificationID(context)
            let members = try Self.membersPage(request)
            guard let stored = try await notifications.get(id) else { throw Self.notFound }
            var body = NotificationBody(stored, counts: try await notifications.counts(id))
            if let members {
                let page = try await notifications.members(id, after: members.after, limit: members.limit)
                body.members = page.map(NotificationBody.Member.init)
                if page.count == members.limit, let last = page.last { body.nextCursor = String(last.userKey) }
            }
            return body
        }
        routes.add(.patch, "/v1/notifications/{notification_id}", access: .admin) { request, context in
            try await update(request, context: context)
        }
        routes.add(.delete, "/v1/notifications/{notification_id}", access: .admin) { _, context in
            guard try await notifications.delete(try Self.notificationID(context)) else { throw Self.notFound }
            return Response(status: .noContent)
        }
    }

    /// `?members=true` with `limit` and `after` (a cursor from `next`); `nil` without it.
    static func membersPage(_ request: Request) throws -> (limit: Int, after: Int64?)? {
        let query = request.uri.queryParameters
        switch query["members"].map(String.init) {
        case nil, "false": return nil
        case "true": break
        default: throw APIError(.badRequest, code: "invalid_members", message: "members must be true or false.")
        }
        let page = try PageRequest(request)
        var after: Int64?
        if let text = page.after {
            guard let key = CanonicalInteger.parse(text) else {
                throw APIError(.badRequest, code: "invalid_after", message: "after must be the next value of a previous page.")
            }
            after = key
        }
        return (page.limit, after)
    }

    // MARK: - Send

    func send(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let body = try await RequestBody.decode(SendNotificationRequest.self, from: request, context: context, limit: Self.maximumBodySize)
        else {
            throw APIError(
                .badRequest,
                code: "invalid_notification",
                message: "The body must name channel_url, template_key and targets or audience."
            )
        }
        return try Self.response(try await send(body, idempotency: try Self.idempotencyKey(request, body: body)))
    }

    /// A send, once its body is decoded: the route's, the console's (which shows the same body as a
    /// `curl` command) and a scheduled send's when it is due (`timeZones`: the part of a local time
    /// for the users of those zones).
    func send(
        _ body: SendNotificationRequest,
        idempotency: IdempotencyKey?,
        timeZones: [String]? = nil,
        fence: PostgresQuery? = nil,
        now: Date = Date()
    ) async throws -> NotificationStore.SendOutcome {
        // A retry is answered before anything else is looked at: the template may have changed since,
        // but the first response stands.
        if let idempotency, let previous = try await notifications.previousOutcome(for: idempotency) {
            return previous
        }
        var draft = try await prepare(body, now: now)
        draft.timeZones = timeZones
        // A broadcast (everyone, a topic) is reached in the background.
        let status: HTTPResponse.Status
        if case .targets = draft.audience { status = .created } else { status = .accepted }
        let outcome: NotificationStore.SendOutcome
        do {
            outcome = try await notifications.send(draft, idempotency: idempotency, fence: fence) { stored in
                StoredResponse(status: status.code, body: try NotificationBody(stored).encoded())
            }
        } catch let error as NotificationStoreError {
            if case .fenceLost = error { throw error }
            throw Self.apiError(error)
        }
        if case .created(let stored, _, let dropped) = outcome {
            if stored.fanoutState == .running { fanoutWake.signal() }
            if dropped > 0 { ThrottleMetrics.droppedCopies.increment(by: dropped) }
        }
        return outcome
    }

    /// Checks a send's body against the channel and template as they are, and renders it: the
    /// notification to store, or the 400 that says what is wrong. A scheduled send is checked so
    /// when it is made, with `now` its time.
    func prepare(_ body: SendNotificationRequest, now: Date = Date()) async throws -> NotificationDraft {
        let (audience, deadline, expiresAt) = try body.validate(now: now)
        guard let channel = try await channels.get(body.channelURL)?.channel else {
            throw APIError(.badRequest, code: "unknown_channel", message: "There is no channel '\(body.channelURL)'.")
        }
        guard let template = try await templates.get(body.templateKey) else {
            throw APIError(.badRequest, code: "unknown_template", message: "There is no template '\(body.templateKey)'.")
        }
        let category = try Self.category(body.category, channel: channel, template: template.template)
        // A template that reads the recipient's profile renders now for every user the send names (a
        // broadcast's fan-out renders the others as it reaches them).
        let perRecipient = template.template.readsUserFields
        if body.batch != nil, perRecipient {
            throw APIError(
                .badRequest,
                code: "invalid_notification",
                message:
                    "batch cannot be given for template '\(template.template.key)': it reads {{user.…}}, and a digest renders the same for each user."
            )
        }
        var named = Array(body.userVariables.keys)
        if case .targets(let ids) = audience { named += ids }
        let profiles = perRecipient ? try await users.profiles(named) : [:]
        let content = try await render(template.template, variables: body.variables, userVariables: body.userVariables, profiles: profiles)
        return NotificationDraft(
            channelURL: channel.url,
            templateKey: template.template.key,
            templateVersion: template.version,
            variables: body.variables,
            content: content,
            category: category,
            tags: body.tags,
            eventDeadline: deadline,
            push: body.push,
            audience: audience,
            excluded: body.exclude ?? [],
            expiresAt: expiresAt,
            rendersPerRecipient: perRecipient,
            throttle: body.throttle?.normalized ?? channel.throttle,
            batch: body.batch?.normalized
        )
    }

    static func response(_ outcome: NotificationStore.SendOutcome) throws -> Response {
        switch outcome {
        case .created(_, let response, _):
            return jsonResponse(response, replayed: false)
        case .replayed(let response):
            return jsonResponse(response, replayed: true)
        case .keyReused:
            throw keyReused
        }
    }

    static let keyReused = APIError(
        .unprocessableContent,
        code: "idempotency_key_reused",
        message: "This Idempotency-Key was already used with a different request."
    )

    static func jsonResponse(_ stored: StoredResponse, replayed: Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if replayed { headers[Self.replayedHeader] = "true" }
        return Response(
            status: HTTPResponse.Status(code: stored.status),
            headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.body))
        )
    }

    static let idempotencyHeader = HTTPField.Name("Idempotency-Key")!
    /// Set on a response that repeats the first response to an earlier request with the same key.
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!

    static func idempotencyKey(_ request: Request, body: SendNotificationRequest) throws -> IdempotencyKey? {
        try idempotencyKey(request) { try body.canonicalDigest() }
    }

    /// The request's `Idempotency-Key`, checked, with `digest` of its body; `nil` without one.
    static func idempotencyKey(_ request: Request, digest: () throws -> [UInt8]) throws -> IdempotencyKey? {
        guard let key = request.headers[idempotencyHeader] else { return nil }
        guard !key.hasPrefix(Scheduler.keyPrefix) else {
            throw APIError(
                .badRequest,
                code: "invalid_idempotency_key",
                message: "Idempotency-Key may not begin with '\(Scheduler.keyPrefix)': scheduled sends use those keys."
            )
        }
        guard (1...IdempotencyKey.maximumLength).contains(key.utf8.count) else {
            throw APIError(
                .badRequest,
                code: "invalid_idempotency_key",
                message: "Idempotency-Key must be 1–\(IdempotencyKey.maximumLength) bytes."
            )
        }
        return IdempotencyKey(key: key, requestHash: try digest())
    }

    /// The category given, else the template's, else the channel's default; empty for a channel without
    /// categories. A category the channel does not have is refused, the template's too: dropping it
    /// would file the notification where its author did not mean it to go.
    static func category(_ requested: String?, channel: Channel, template: Template) throws -> String {
        let ids = channel.categories.map(\.id)
        let known = ids.isEmpty ? "it has none" : "it has \(ids.joined(separator: ", "))"
        if let requested {
            guard ids.contains(requested) else {
                throw APIError(
                    .badRequest,
                    code: "unknown_category",
                    message: "category '\(requested)' is not a category of channel '\(channel.url)'; \(known)."
                )
            }
            return requested
        }
        if let own = template.category {
            guard ids.contains(own) else {
                throw APIError(
                    .badRequest,
                    code: "unknown_category",
                    message:
                        "template '\(template.key)' has category '\(own)', which channel '\(channel.url)' does not have (\(known)); name one of the channel's in category, or add it to the channel."
                )
            }
            return own
        }
        return channel.categories.first(where: \.isDefault)?.id ?? ""
    }

    /// The notification's content. Users with their own variables are rendered in the variant of
    /// their locale, read here when the template is translated and `profiles` has not got them.
    func render(
        _ template: Template,
        variables: [String: JSONValue],
        userVariables: [String: [String: JSONValue]],
        profiles: [String: RecipientProfile]
    ) async throws -> RenderedNotification {
        let locales =
            template.variants?.isEmpty == false && !userVariables.isEmpty && profiles.isEmpty
            ? try await users.profiles(Array(userVariables.keys)).compactMapValues(\.locale) : [:]
        do {
            return try template.renderNotification(variables: variables, userVariables: userVariables, profiles: profiles, locales: locales)
        } catch {
            switch error.kind {
            case .variable: throw APIError(.badRequest, code: "invalid_variables", message: error.message)
            case .tooLarge: throw APIError(.badRequest, code: "data_too_large", message: error.message)
            }
        }
    }

    // MARK: - Change

    func update(_ request: Request, context: HeraldRequestContext) async throws -> NotificationBody {
        let id = try Self.notificationID(context)
        guard let body = try await RequestBody.decode(UpdateNotificationRequest.self, from: request, context: context, limit: Self.maximumBodySize)
        else {
            throw APIError(.badRequest, code: "invalid_notification", message: "The body must give the new variables.")
        }
        try body.validate()
        guard let current = try await notifications.get(id) else { throw Self.notFound }
        // A batched send's copies are digests: renderings of several sends, not of these variables.
        guard current.batch == nil else {
            throw APIError(
                .conflict,
                code: "batched_notification",
                message:
                    "Notification \(id) was sent with a batch: its recipients' digests render several sends, so it cannot be edited; delete it instead."
            )
        }
        guard let template = try await templates.get(current.templateKey, version: current.templateVersion) else {
            throw Self.notFound
        }
        // Users with their own variables render here; the store renders every other copy again when
        // the template reads the recipient's profile.
        let profiles = template.template.readsUserFields ? try await users.profiles(Array(body.userVariables.keys)) : [:]
        let content = try await render(template.template, variables: body.variables, userVariables: body.userVariables, profiles: profiles)
        do {
            guard let updated = try await notifications.update(id, variables: body.variables, content: content) else { throw Self.notFound }
            return NotificationBody(updated, counts: try await notifications.counts(id))
        } catch let error as NotificationStoreError {
            throw Self.apiError(error)
        }
    }

    // MARK: - Helpers

    static let notFound = APIError(.notFound, code: "notification_not_found", message: "No notification with this id.")

    static func notificationID(_ context: HeraldRequestContext) throws -> Int64 {
        let text = try context.parameters.require("notification_id")
        guard let id = CanonicalInteger.id(text) else {
            throw APIError(
                .badRequest,
                code: "invalid_notification_id",
                message: "notification_id must be a positive integer written in plain decimal (no sign, no leading zero)."
            )
        }
        return id
    }

    /// A request named users who do not exist (a store lists the first of them and counts all).
    static func unknownUsers(_ ids: [String], total: Int) -> APIError {
        APIError(.badRequest, code: "unknown_users", message: "These users do not exist: \(listed(ids, total: total)).")
    }

    /// Ids as a message lists them: the first ones quoted, and how many more.
    static func listed(_ ids: [String], total: Int) -> String {
        let shown = ids.map { "'\($0)'" }.joined(separator: ", ")
        return total > ids.count ? "\(shown) and \(total - ids.count) more" : shown
    }

    static func apiError(_ error: NotificationStoreError) -> APIError {
        switch error {
        case .unknownChannel:
            return APIError(.badRequest, code: "unknown_channel", message: "The channel no longer exists.")
        case .unknownTopic:
            return APIError(.badRequest, code: "unknown_topic", message: "There is no such topic; create it with PUT /v1/topics/{topic_id}.")
        case .unknownUsers(let ids, let total):
            return unknownUsers(ids, total: total)
        case .notRecipients(let ids, let total):
            return APIError(
                .badRequest,
                code: "not_recipients",
                message: "user_variables names users who are not recipients: \(listed(ids, total: total))."
            )
        case .fenceLost:
            // Only a scheduled send's own send has a fence, and the scheduler handles its loss.
            return APIError(.conflict, code: "schedule_sending", message: "The scheduled send is no longer held by this worker.")
        case .fanoutInProgress:
            return APIError(
                .conflict,
                code: "fanout_in_progress",
                message: "The notification is still reaching every user; change it when its fan-out is done."
            )
        }
    }
}
