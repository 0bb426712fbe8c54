import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Postgres

/// `/v1/me/channels/{channel_url}/categories`: a user's choice, per category of a channel, of whether
/// its notifications reach their collection (`inbox`) and may alert them (`push`), over the defaults
/// the channel's categories set.
struct CategoryPreferencesController: Sendable {
    let preferences: CategoryPreferenceStore
    let collections: CollectionStore
    let channels: ChannelStore

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/me/channels/{channel_url}/categories", parse: CollectionController.ChannelInput.init) { _, context, input, answer in
            let user = try CollectionController.user(context)
            let (channel, categories) = try await definition(input, answer: answer)
            let choices = try await preferences.choices(userKey: user.key, channelKey: channel.key)
            return ListBody(categories: categories.map { CategoryBody($0, choice: choices[$0.id] ?? CategoryChoice()) })
        }
        routes.add(.put, "/v1/me/channels/{channel_url}/categories/{category}", parse: CollectionController.ChannelInput.init) {
            request,
            context,
            input,
            answer in
            let user = try CollectionController.user(context)
            guard let id = try context.parameters.require("category").removingPercentEncoding else { throw Self.categoryNotFound }
            let (channel, categories) = try await definition(input, answer: answer)
            guard let category = categories.first(where: { $0.id == id }) else { throw Self.categoryNotFound }
            guard let change = try await RequestBody.decode(Change.self, from: request, context: context), change.inbox != nil || change.push != nil
            else {
                throw APIError(
                    .badRequest,
                    code: "invalid_category_preferences",
                    message: "The body must give inbox or push (true, false, or null for the default)."
                )
            }
            let choice: CategoryChoice
            do {
                choice = try await preferences.set(userKey: user.key, channelKey: channel.key, category: id, inbox: change.inbox, push: change.push)
            } catch let error as PostgresError where error.code == .foreignKeyViolation {
                throw CollectionController.channelNotFound  // deleted meanwhile
            }
            return CategoryBody(category, choice: choice)
        }
    }

    static let categoryNotFound = APIError(.notFound, code: "category_not_found", message: "The channel has no category with this id.")

    /// The channel and its categories as defined now.
    func definition(_ input: CollectionController.ChannelInput, answer: CollectionChannel??) async throws -> (CollectionChannel, [Channel.Category]) {
        let channel = try await CollectionController.channel(input, answer: answer, collections)
        guard let stored = try await channels.get(channel.url) else { throw CollectionController.channelNotFound }
        return (channel, stored.channel.categories)
    }

    /// The body of `PUT`: each field given changes (`null`: back to the channel's default), an absent
    /// one stays.
    struct Change: Decodable {
        var inbox: Bool??
        var push: Bool??

        enum CodingKeys: String, CodingKey {
            case inbox, push
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            inbox =
                container.contains(.inbox)
                ? .some(try container.decodeNil(forKey: .inbox) ? nil : try container.decode(Bool.self, forKey: .inbox)) : nil
            push =
                container.contains(.push) ? .some(try container.decodeNil(forKey: .push) ? nil : try container.decode(Bool.self, forKey: .push)) : nil
        }
    }

    /// One category as the user sees it: what applies to them, the channel's defaults, and whether
    /// each is their own choice.
    struct CategoryBody: ResponseEncodable {
        var id: String
        var name: String
        var inbox: Bool
        var push: Bool
        var inboxDefault: Bool
        var pushDefault: Bool
        var inboxChosen: Bool
        var pushChosen: Bool

        init(_ category: Channel.Category, choice: CategoryChoice) {
            id = category.id
            name = category.name
            inbox = choice.inbox ?? category.inboxDefault
            push = choice.push ?? category.pushDefault
            inboxDefault = category.inboxDefault
            pushDefault = category.pushDefault
            inboxChosen = choice.inbox != nil
            pushChosen = choice.push != nil
        }

        enum CodingKeys: String, CodingKey {
            case id, name, inbox, push
            case inboxDefault = "inbox_default"
            case pushDefault = "push_default"
            case inboxChosen = "inbox_chosen"
            case pushChosen = "push_chosen"
        }
    }

    struct ListBody: ResponseEncodable {
        var categories: [CategoryBody]
    }
}
