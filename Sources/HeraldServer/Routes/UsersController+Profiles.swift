import Foundation
import HeraldCore
import HeraldStore
import HeraldWire
import Hummingbird
import Postgres

/// A user's profile: what an admin sets with `PUT /v1/users/{user_id}` and reads back, one user or a
/// page of them filtered by their properties.
extension UsersController {
    /// Longest nickname accepted.
    static let maximumNicknameLength = 255
    /// Property keys: what a template can name in `{{user.properties.key}}`.
    static let maximumPropertyKeys = 100
    static let maximumPropertyDepth = 8
    /// Property filters in one list request.
    static let maximumPropertyFilters = 10

    struct UserUpdate: Decodable {
        var nickname: String?
        var profileURL: String?
        var locale: String??
        var timeZone: String?
        var properties: JSONValue?

        enum CodingKeys: String, CodingKey {
            case nickname
            case profileURL = "profile_url"
            case locale
            case timeZone = "time_zone"
            case properties
        }

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            nickname = try container.decodeIfPresent(String.self, forKey: .nickname)
            profileURL = try container.decodeIfPresent(String.self, forKey: .profileURL)
            if container.contains(.locale) {
                locale = .some(try container.decodeNil(forKey: .locale) ? nil : try container.decode(String.self, forKey: .locale))
            }
            timeZone = try container.decodeIfPresent(String.self, forKey: .timeZone)
            properties = try container.decodeIfPresent(JSONValue.self, forKey: .properties)
        }

        /// The store's change, or a 400 naming the first field at fault.
        func change() throws -> UserChange {
            if let nickname, nickname.count > UsersController.maximumNicknameLength {
                throw APIError(
                    .badRequest,
                    code: "invalid_nickname",
                    message: "nickname must be at most \(UsersController.maximumNicknameLength) characters."
                )
            }
            if let url = profileURL, !url.isEmpty, !WebURL.isHTTP(url) {
                throw APIError(
                    .badRequest,
                    code: "invalid_profile_url",
                    message: "profile_url must be an http(s) URL of at most \(WebURL.maximumLength) characters."
                )
            }
            if case .some(.some(let tag)) = locale, !Self.isLanguageTag(tag) {
                throw APIError(.badRequest, code: "invalid_locale", message: "locale must be a BCP 47 language tag such as en or de-CH (or null).")
            }
            if let timeZone, timeZone.isEmpty || timeZone.count > 64 || TimeZone(identifier: timeZone) == nil {
                throw APIError(.badRequest, code: "invalid_time_zone", message: "time_zone must be an IANA time zone such as Europe/Berlin.")
            }
            var members: [String: JSONValue]?
            if let properties {
                guard case .object(let given) = properties else {
                    throw Self.invalidProperties("properties must be a JSON object.")
                }
                guard given.count <= UsersController.maximumPropertyKeys else {
                    throw Self.invalidProperties("properties may have at most \(UsersController.maximumPropertyKeys) keys.")
                }
                if let key = given.keys.sorted().first(where: { !Template.isIdentifier($0) }) {
                    throw Self.invalidProperties(
                        "properties key '\(key)' must be a letter or _ followed by letters, digits or _ (at most 64), so templates can name it."
                    )
                }
                guard properties.depth <= UsersController.maximumPropertyDepth + 1 else {
                    throw Self.invalidProperties("properties may nest at most \(UsersController.maximumPropertyDepth) levels.")
                }
                guard properties.encodedSize <= UserChange.maximumPropertiesBytes else {
                    throw UsersController.propertiesTooLarge
                }
                members = given
            }
            return UserChange(nickname: nickname, profileURL: profileURL, locale: locale, timeZone: timeZone, properties: members)
        }

        static func invalidProperties(_ message: String) -> APIError {
            APIError(.badRequest, code: "invalid_properties", message: message)
        }

        /// A language, then subtags of letters and digits (`en`, `de-CH`, `zh-Hant-TW`): the shape of
        /// a BCP 47 tag, at most 35 characters.
        static func isLanguageTag(_ tag: String) -> Bool {
            let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
            guard tag.count <= 35, let language = parts.first, (2...8).contains(language.count),
                language.allSatisfy({ $0.isASCII && $0.isLetter })
            else { return false }
            return parts.dropFirst().allSatisfy { part in
                (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
            }
        }
    }

    static let propertiesTooLarge = APIError(
        .badRequest,
        code: "properties_too_large",
        message: "properties must encode to at most \(UserChange.maximumPropertiesBytes) bytes, with the stored ones merged in."
    )

    struct UserBody: ResponseEncodable {
        var userID: String
        var nickname: String
        var profileURL: String
        var locale: String?
        var timeZone: String
        var properties: [String: JSONValue]
        var createdAt: String
        var updatedAt: String

        init(_ user: User) {
            userID = user.id
            nickname = user.nickname
            profileURL = user.profileURL
            locale = user.locale
            timeZone = user.timeZone
            properties = user.properties
            createdAt = RFC3339.string(from: user.createdAt)
            updatedAt = RFC3339.string(from: user.updatedAt)
        }

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case nickname
            case profileURL = "profile_url"
            case locale
            case timeZone = "time_zone"
            case properties
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userID, forKey: .userID)
            try container.encode(nickname, forKey: .nickname)
            try container.encode(profileURL, forKey: .profileURL)
            try container.encode(locale, forKey: .locale)  // null when unknown
            try container.encode(timeZone, forKey: .timeZone)
            try container.encode(properties, forKey: .properties)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(updatedAt, forKey: .updatedAt)
        }
    }

    struct ListBody: ResponseEncodable {
        var users: [UserBody]
        var next: String?
    }

    func upsertUser(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<UserBody> {
        let userID = try Self.userID(context)
        let change = try (try await RequestBody.decode(UserUpdate.self, from: request, context: context) ?? UserUpdate()).change()
        do {
            let (user, created) = try await users.upsert(id: userID, change)
            return EditedResponse(status: created ? .created : .ok, response: UserBody(user))
        } catch let error as PostgresError where error.code == .checkViolation {
            // Every other column was checked above: the merged properties outgrew the limit.
            throw Self.propertiesTooLarge
        }
    }

    /// `GET /v1/users?after=&limit=&property.plan=pro`: users in id order, those with every property
    /// given when filtered.
    func list(_ request: Request) async throws -> ListBody {
        let query = request.uri.queryParameters
        let page = try PageRequest(query: query)
        if let after = page.after, let problem = UserID.problem(with: after) {
            throw APIError(.badRequest, code: "invalid_after", message: "after: \(problem)")
        }
        var filters: [(key: String, value: String)] = []
        for (name, value) in query where name.hasPrefix("property.") {
            let key = String(name.dropFirst("property.".count))
            guard Template.isIdentifier(key) else {
                throw APIError(.badRequest, code: "invalid_property_filter", message: "'\(name)' must name a property key, as property.plan=pro.")
            }
            guard value.count <= 1_024 else {
                throw APIError(.badRequest, code: "invalid_property_filter", message: "'\(name)' must be at most 1024 characters.")
            }
            filters.append((key, String(value)))
        }
        guard filters.count <= Self.maximumPropertyFilters else {
            throw APIError(.badRequest, code: "invalid_property_filter", message: "At most \(Self.maximumPropertyFilters) property filters.")
        }
        let list = try await users.list(after: page.after, limit: page.limit, properties: filters)
        return ListBody(users: list.map(UserBody.init), next: list.count == page.limit ? list.last?.id : nil)
    }
}
