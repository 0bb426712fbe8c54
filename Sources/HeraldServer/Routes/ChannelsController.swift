import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// Admin routes for notification channels.
struct ChannelsController: Sendable {
    let channels: ChannelStore

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/channels/{channel_url}", access: .admin) { request, context in
            try await put(request, context: context)
        }
        routes.add(.get, "/v1/channels", access: .admin) { request, _ in
            try await list(request)
        }
        routes.add(.get, "/v1/channels/{channel_url}", access: .admin) { _, context in
            guard let stored = try await channels.get(try Self.channelURL(context)) else { throw Self.notFound }
            return ChannelBody(stored)
        }
        routes.add(.delete, "/v1/channels/{channel_url}", access: .admin) { _, context in
            guard try await channels.delete(try Self.channelURL(context)) else { throw Self.notFound }
            return DeletedBody(deleted: true)
        }
    }

    /// The body of `PUT`: the whole definition (the URL comes from the path).
    struct Definition: Decodable {
        var kind: Channel.Kind
        var name: String?
        var coverURL: String?
        var customType: String?
        var categories: [Channel.Category]?
        var retention: String?
        var throttle: Throttle?

        enum CodingKeys: String, CodingKey {
            case kind, name, categories, retention, throttle
            case coverURL = "cover_url"
            case customType = "custom_type"
        }
    }

    struct ChannelBody: ResponseEncodable {
        var channel: Channel
        var createdAt: String
        var updatedAt: String

        init(_ stored: StoredChannel) {
            channel = stored.channel
            createdAt = RFC3339.string(from: stored.createdAt)
            updatedAt = RFC3339.string(from: stored.updatedAt)
        }

        func encode(to encoder: any Encoder) throws {
            try channel.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            // `Channel` leaves an absent retention and throttle out; the API says null.
            if channel.retention == nil { try container.encodeNil(forKey: .retention) }
            if channel.throttle == nil { try container.encodeNil(forKey: .throttle) }
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(updatedAt, forKey: .updatedAt)
        }

        enum Keys: String, CodingKey {
            case retention, throttle
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

    struct ListBody: ResponseEncodable {
        var channels: [ChannelBody]
        var next: String?
    }

    struct DeletedBody: ResponseEncodable {
        var deleted: Bool
    }

    static let notFound = APIError(.notFound, code: "channel_not_found", message: "No channel with this URL.")

    func put(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<ChannelBody> {
        let url = try Self.channelURL(context)
        guard let definition = try await RequestBody.decode(Definition.self, from: request, context: context) else {
            throw APIError(.badRequest, code: "invalid_channel", message: "The body must define the channel, at least its kind (feed or chat).")
        }
        let channel = Channel(
            url: url,
            kind: definition.kind,
            name: definition.name ?? "",
            coverURL: definition.coverURL ?? "",
            customType: definition.customType ?? "",
            categories: definition.categories ?? [],
            retention: definition.retention,
            throttle: definition.throttle
        )
        if let problem = channel.problem() {
            throw APIError(.badRequest, code: "invalid_channel", message: "\(problem.field) \(problem.message).")
        }
        do {
            let (stored, outcome) = try await channels.put(channel)
            return EditedResponse(status: outcome == .created ? .created : .ok, response: ChannelBody(stored))
        } catch let change as ChannelStore.KindChange {
            throw APIError(.conflict, code: "kind_change", message: "This channel is a \(change.existing.rawValue) channel; its kind cannot change.")
        }
    }

    func list(_ request: Request) async throws -> ListBody {
        let page = try PageRequest(request)
        let found = try await channels.list(after: page.after, limit: page.limit)
        return ListBody(channels: found.map(ChannelBody.init), next: found.count == page.limit ? found.last?.channel.url : nil)
    }

    /// The `{channel_url}` path parameter, validated.
    static func channelURL(_ context: HeraldRequestContext) throws -> String {
        let url = try context.parameters.require("channel_url")
        if let problem = Channel.urlProblem(url) {
            throw APIError(.badRequest, code: "invalid_channel_url", message: "channel_url \(problem).")
        }
        return url
    }
}
