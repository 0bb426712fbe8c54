import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Postgres

/// Topics: the admin's routes (define, list, subscribe users in bulk) and a user's own (list, follow,
/// unfollow, mute). A send targets one with `"topic"` (`NotificationsController`).
struct TopicsController: Sendable {
    let topics: TopicStore

    /// Users one subscribe or unsubscribe request may name.
    static let maximumUsersPerRequest = 100_000
    /// 100,000 ids of up to 128 characters, quoted: 16 MiB.
    static let maximumBodySize = 16 << 20
    static let maximumNameLength = 255

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/topics/{topic_id}", access: .admin) { request, context in
            let id = try Self.topicID(context)
            let (body, created) = try await put(id, try await RequestBody.decode(Definition.self, from: request, context: context) ?? Definition())
            return EditedResponse(status: created ? .created : .ok, response: body)
        }
        routes.add(.get, "/v1/topics", access: .admin) { request, _ in
            let page = try PageRequest(request)
            if let after = page.after, let problem = TopicID.problem(with: after) { throw Self.invalid("after", problem) }
            let list = try await topics.list(after: page.after, limit: page.limit)
            return ListBody(topics: list.map { TopicBody($0) }, next: list.count == page.limit ? list.last?.id : nil)
        }
        routes.add(.get, "/v1/topics/{topic_id}", access: .admin) { _, context in
            guard let (topic, counts) = try await topics.get(try Self.topicID(context)) else { throw Self.notFound }
            return TopicBody(topic, counts: counts)
        }
        routes.add(.delete, "/v1/topics/{topic_id}", access: .admin) { _, context in
            guard try await topics.delete(try Self.topicID(context)) else { throw Self.notFound }
            return Response(status: .noContent)
        }
        routes.add(.post, "/v1/topics/{topic_id}/subscribers", access: .admin) { request, context in
            let id = try Self.topicID(context)
            return try await changeSubscribers(id, try await Self.subscribers(request, context: context), add: true)
        }
        routes.add(.post, "/v1/topics/{topic_id}/subscribers/remove", access: .admin) { request, context in
            let id = try Self.topicID(context)
            return try await changeSubscribers(id, try await Self.subscribers(request, context: context), add: false)
        }
        routes.add(.get, "/v1/topics/{topic_id}/subscribers", access: .admin) { request, context in
            let id = try Self.topicID(context)
            let page = try PageRequest(request, maximum: 1000)
            var after: Int64?
            if let text = page.after {
                guard let key = CanonicalInteger.parse(text) else { throw Self.invalid("after", "must be the next value of a previous page") }
                after = key
            }
            guard let list = try await topics.subscribers(topic: id, after: after, limit: page.limit) else { throw Self.notFound }
            return SubscribersBody(
                subscribers: list.map(SubscriberBody.init),
                next: list.count == page.limit ? list.last.map { String($0.userKey) } : nil
            )
        }

        routes.add(.get, "/v1/me/topics", access: .user) { request, context in
            let user = try CollectionController.user(context)
            let page = try PageRequest(request)
            if let after = page.after, let problem = TopicID.problem(with: after) { throw Self.invalid("after", problem) }
            let list = try await topics.subscriptions(userKey: user.key, after: page.after, limit: page.limit)
            return MyTopicsBody(topics: list.map(MyTopicBody.init), next: list.count == page.limit ? list.last?.topic.id : nil)
        }
        routes.add(.put, "/v1/me/topics/{topic_id}", access: .user) { request, context in
            let user = try CollectionController.user(context)
            let id = try Self.topicID(context)
            let body = try await RequestBody.decode(Follow.self, from: request, context: context) ?? Follow()
            let (subscription, created) = try await Self.mapped { try await topics.follow(userKey: user.key, topic: id, muted: body.muted) }
            return EditedResponse(status: created ? .created : .ok, response: MyTopicBody(subscription))
        }
        routes.add(.delete, "/v1/me/topics/{topic_id}", access: .user) { _, context in
            let user = try CollectionController.user(context)
            let id = try Self.topicID(context)
            guard try await Self.mapped({ try await topics.unfollow(userKey: user.key, topic: id) }) else {
                throw APIError(.notFound, code: "not_subscribed", message: "You do not follow this topic.")
            }
            return Response(status: .noContent)
        }
    }

    /// `PUT /v1/topics/{topic_id}` from its decoded body (the console's too).
    func put(_ id: String, _ definition: Definition) async throws -> (TopicBody, created: Bool) {
        // Code points, as PostgreSQL's char_length counts them (the table's check).
        if let name = definition.name, name.unicodeScalars.count > Self.maximumNameLength {
            throw Self.invalid("name", "must be at most \(Self.maximumNameLength) characters")
        }
        let (topic, created) = try await topics.put(id: id, name: definition.name ?? "", selfSubscribe: definition.selfSubscribe ?? false)
        return (TopicBody(topic), created)
    }

    /// Adding or removing subscribers from a decoded body (the console's too).
    func changeSubscribers(_ id: String, _ body: Subscribers, add: Bool) async throws -> ChangedBody {
        let userIDs = try Self.userIDs(body)
        if add { return ChangedBody(added: try await Self.mapped { try await topics.addSubscribers(topic: id, userIDs: userIDs) }) }
        return ChangedBody(removed: try await Self.mapped { try await topics.removeSubscribers(topic: id, userIDs: userIDs) })
    }

    // MARK: - Bodies

    /// The body of `PUT /v1/topics/{topic_id}`: the whole definition.
    struct Definition: Decodable {
        var name: String?
        var selfSubscribe: Bool?

        enum CodingKeys: String, CodingKey {
            case name
            case selfSubscribe = "self_subscribe"
        }
    }

    /// The body of `PUT /v1/me/topics/{topic_id}`.
    struct Follow: Decodable {
        var muted: Bool?
    }

    /// The body of the subscriber changes.
    struct Subscribers: Decodable {
        var userIDs: [String]

        enum CodingKeys: String, CodingKey {
            case userIDs = "user_ids"
        }
    }

    struct TopicBody: ResponseEncodable {
        var topicID: String
        var name: String
        var selfSubscribe: Bool
        var subscribers: Int64?
        var muted: Int64?
        var createdAt: String
        var updatedAt: String

        init(_ topic: Topic, counts: TopicCounts? = nil) {
            topicID = topic.id
            name = topic.name
            selfSubscribe = topic.selfSubscribe
            subscribers = counts?.subscribers
            muted = counts?.muted
            createdAt = RFC3339.string(from: topic.createdAt)
            updatedAt = RFC3339.string(from: topic.updatedAt)
        }

        enum CodingKeys: String, CodingKey {
            case topicID = "topic_id"
            case name
            case selfSubscribe = "self_subscribe"
            case subscribers, muted
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

    struct ListBody: ResponseEncodable {
        var topics: [TopicBody]
        var next: String?
    }

    struct ChangedBody: ResponseEncodable {
        var added: Int?
        var removed: Int?
    }

    struct SubscriberBody: ResponseEncodable {
        var userID: String
        var muted: Bool
        var subscribedAt: String

        init(_ subscription: TopicSubscription) {
            userID = subscription.userID
            muted = subscription.muted
            subscribedAt = RFC3339.string(from: subscription.subscribedAt)
        }

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case muted
            case subscribedAt = "subscribed_at"
        }
    }

    struct SubscribersBody: ResponseEncodable {
        var subscribers: [SubscriberBody]
        var next: String?
    }

    /// A user's subscription as they see it.
    struct MyTopicBody: ResponseEncodable {
        var topicID: String
        var name: String
        var selfSubscribe: Bool
        var muted: Bool
        var subscribedAt: String

        init(_ subscription: TopicSubscription) {
            topicID = subscription.topic.id
            name = subscription.topic.name
            selfSubscribe = subscription.topic.selfSubscribe
            muted = subscription.muted
            subscribedAt = RFC3339.string(from: subscription.subscribedAt)
        }

        enum CodingKeys: String, CodingKey {
            case topicID = "topic_id"
            case name
            case selfSubscribe = "self_subscribe"
            case muted
            case subscribedAt = "subscribed_at"
        }
    }

    struct MyTopicsBody: ResponseEncodable {
        var topics: [MyTopicBody]
        var next: String?
    }

    // MARK: - Helpers

    static let notFound = APIError(.notFound, code: "topic_not_found", message: "No topic with this id.")

    static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_topic", message: "\(field) \(message).")
    }

    /// The `{topic_id}` path parameter, percent-decoded (a browser's `encodeURIComponent` writes `:`
    /// as `%3A`) and validated.
    static func topicID(_ context: HeraldRequestContext) throws -> String {
        guard let id = try context.parameters.require("topic_id").removingPercentEncoding else {
            throw APIError(.badRequest, code: "invalid_topic_id", message: "the topic id is not valid percent-encoding")
        }
        return try topicID(id)
    }

    /// A topic id from anywhere, validated.
    static func topicID(_ id: String) throws -> String {
        if let problem = TopicID.problem(with: id) { throw APIError(.badRequest, code: "invalid_topic_id", message: problem) }
        return id
    }

    /// The body of a subscriber change (16 MiB at most); a missing body is a 400.
    static func subscribers(_ request: Request, context: HeraldRequestContext) async throws -> Subscribers {
        guard let body = try await RequestBody.decode(Subscribers.self, from: request, context: context, limit: maximumBodySize) else {
            throw invalid("user_ids", "is required")
        }
        return body
    }

    /// The `user_ids` of a subscriber change: 1–100,000 valid ids, duplicates dropped.
    static func userIDs(_ body: Subscribers) throws -> [String] {
        guard (1...maximumUsersPerRequest).contains(body.userIDs.count) else {
            throw invalid("user_ids", "must list 1–\(maximumUsersPerRequest) user ids")
        }
        if let index = body.userIDs.firstIndex(where: { UserID.problem(with: $0) != nil }) {
            throw invalid("user_ids[\(index)]", UserID.problem(with: body.userIDs[index])!)
        }
        var seen = Set<String>()
        return body.userIDs.filter { seen.insert($0).inserted }
    }

    /// Runs a store call, its errors as the API's.
    static func mapped<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as PostgresError where error.code == .foreignKeyViolation {
            // A user erased (or the topic deleted) while the request ran: nothing was written.
            throw APIError(
                .conflict,
                code: "changed_meanwhile",
                message: "A user or the topic was removed meanwhile; nothing was changed. Try again."
            )
        } catch let error as TopicStoreError {
            switch error {
            case .unknownTopic:
                throw notFound
            case .unknownUsers(let ids, let total):
                throw NotificationsController.unknownUsers(ids, total: total)
            case .notSelfSubscribe:
                throw APIError(
                    .forbidden,
                    code: "topic_not_self_subscribe",
                    message: "This topic's subscribers are chosen by the app; you can mute it instead."
                )
            }
        }
    }
}
