/// What a template may read of the user it renders for: `{{user.id}}`, `{{user.nickname}}`,
/// `{{user.profile_url}}`, `{{user.locale}}`, `{{user.time_zone}}` and `{{user.properties.key}}`
/// (nested objects by further keys, arrays as sections).
public struct RecipientProfile: Sendable, Equatable {
    public var id: String
    public var nickname: String
    public var profileURL: String
    public var locale: String?
    public var timeZone: String
    public var properties: [String: JSONValue]

    public init(id: String, nickname: String, profileURL: String, locale: String?, timeZone: String, properties: [String: JSONValue]) {
        self.id = id
        self.nickname = nickname
        self.profileURL = profileURL
        self.locale = locale
        self.timeZone = timeZone
        self.properties = properties
    }

    /// The fields a template names after `user.`; `properties` is followed by a key.
    public static let fields: Set<String> = ["id", "nickname", "profile_url", "locale", "time_zone", "properties"]

    /// The mustache context of `user`: strings, numbers as the text they render to, booleans as
    /// booleans (so `{{#user.properties.vip}}` is a condition), arrays and objects as sections.
    var context: [String: Any] {
        var fields: [String: Any] = [
            "id": id, "nickname": nickname, "profile_url": profileURL, "time_zone": timeZone,
            "properties": Self.context(of: .object(properties)) as Any,
        ]
        if let locale { fields["locale"] = locale }
        return fields
    }

    static func context(of value: JSONValue) -> Any? {
        switch value {
        case .string(let text): return text
        case .number: return Template.text(of: value)
        case .bool(let flag): return flag
        case .null: return nil
        case .array(let values): return values.compactMap(context(of:))
        case .object(let members): return members.compactMapValues(context(of:))
        }
    }
}
