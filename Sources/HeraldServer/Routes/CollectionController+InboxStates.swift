import HeraldCore
import HeraldStore
import Hummingbird

/// The user's own states of their notifications: archive (some, every read one, all), unarchive,
/// mark unread, delete from their collection. Each answers the channel's state after, as a read mark
/// does, and reaches the user's other devices by sync and the stream.
extension CollectionController {
    struct StateChangeRequest: Decodable {
        var notificationIDs: [String]?
        var scope: String?

        enum CodingKeys: String, CodingKey {
            case notificationIDs = "notification_ids"
            case scope
        }
    }

    func registerInboxStates(in routes: RouteRegistry) {
        routes.add(.post, "/v1/me/channels/{channel_url}/archive", parse: ChannelInput.init) { request, context, input, answer in
            let (user, channel, body) = try await stateChange(request, input, answer: answer, context: context)
            let scope: ArchiveScope
            switch (body.notificationIDs, body.scope) {
            case (let given?, nil):
                scope = .ids(try Self.notificationIDs(given, otherwise: #"or "scope": "read" or "all" instead"#))
            case (nil, "read"?): scope = .read
            case (nil, "all"?): scope = .all
            default:
                throw APIError(
                    .badRequest,
                    code: "invalid_archive",
                    message: #"Give either notification_ids or "scope": "read" (every read notification) or "all"."#
                )
            }
            let changed = try await collections.archive(userKey: user.key, channelKey: channel.key, scope: scope)
            return StateBody(changed.state, position: changed.position)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/unarchive", parse: ChannelInput.init) { request, context, input, answer in
            let (user, channel, ids) = try await idsChange(request, input, answer: answer, context: context)
            let changed = try await collections.unarchive(userKey: user.key, channelKey: channel.key, ids: ids)
            return StateBody(changed.state, position: changed.position)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/unread", parse: ChannelInput.init) { request, context, input, answer in
            let (user, channel, ids) = try await idsChange(request, input, answer: answer, context: context)
            let changed = try await collections.markUnread(userKey: user.key, channelKey: channel.key, ids: ids)
            return StateBody(changed.state, position: changed.position)
        }
        routes.add(.post, "/v1/me/channels/{channel_url}/delete", parse: ChannelInput.init) { request, context, input, answer in
            let (user, channel, ids) = try await idsChange(request, input, answer: answer, context: context)
            let changed = try await collections.deleteForUser(userKey: user.key, channelKey: channel.key, ids: ids)
            return StateBody(changed.state, position: changed.position)
        }
    }

    /// The user, the channel and the body of a state change.
    private func stateChange(
        _ request: Request,
        _ input: ChannelInput,
        answer: CollectionChannel??,
        context: HeraldRequestContext
    ) async throws -> (AuthenticatedUser, CollectionChannel, StateChangeRequest) {
        let user = try Self.user(context)
        let channel = try await Self.channel(input, answer: answer, collections)
        guard let body = try await RequestBody.decode(StateChangeRequest.self, from: request, context: context) else {
            throw APIError(.badRequest, code: "invalid_notification_ids", message: "The body must list notification_ids.")
        }
        return (user, channel, body)
    }

    /// The user, the channel and the `notification_ids` of a change that takes only ids.
    private func idsChange(
        _ request: Request,
        _ input: ChannelInput,
        answer: CollectionChannel??,
        context: HeraldRequestContext
    ) async throws -> (AuthenticatedUser, CollectionChannel, [Int64]) {
        let (user, channel, body) = try await stateChange(request, input, answer: answer, context: context)
        guard body.scope == nil, let given = body.notificationIDs else {
            throw APIError(.badRequest, code: "invalid_notification_ids", message: "The body must list notification_ids (and nothing else).")
        }
        return (user, channel, try Self.notificationIDs(given, otherwise: "a change names the notifications it changes"))
    }
}
