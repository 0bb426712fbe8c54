/// A notification channel's definition, as admins write it.
public struct Channel: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        /// Newest at the top, not shown in the channel list.
        case feed
        /// Newest at the bottom, shown in the channel list with its last notification.
        case chat
    }

    /// A category a notification can be filed under; the feed can be filtered by it.
    public struct Category: Sendable, Equatable, Codable {
        public var id: String
        public var name: String
        public var isDefault: Bool
        /// Whether the category's notifications reach a user's collection unless they choose
        /// otherwise (`CategoryPreference`).
        public var inboxDefault: Bool
        /// Whether they may alert a user unless they choose otherwise.
        public var pushDefault: Bool

        public init(id: String, name: String, isDefault: Bool, inboxDefault: Bool = true, pushDefault: Bool = true) {
            self.id = id
            self.name = name
            self.isDefault = isDefault
            self.inboxDefault = inboxDefault
            self.pushDefault = pushDefault
        }

        enum CodingKeys: String, CodingKey {
            case id, name
            case isDefault = "is_default"
            case inboxDefault = "inbox_default"
            case pushDefault = "push_default"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            name = try container.decodeIfPresent(String.self, forKey: .name) ?? id
            isDefault = try container.decodeIfPresent(Bool.self, forKey: .isDefault) ?? false
            inboxDefault = try container.decodeIfPresent(Bool.self, forKey: .inboxDefault) ?? true
            pushDefault = try container.decodeIfPresent(Bool.self, forKey: .pushDefault) ?? true
        }
    }

    public var url: String
    public var kind: Kind
    public var name: String
    public var coverURL: String
    public var customType: String
    public var categories: [Category]
    /// How long notifications stay, as written (`"90d"`; see `RetentionPeriod`); `nil` keeps them.
    public var retention: String?
    /// How often one user may hear from the channel; `nil`: as often as it sends.
    public var throttle: Throttle?

    public init(
        url: String,
        kind: Kind,
        name: String = "",
        coverURL: String = "",
        customType: String = "",
        categories: [Category] = [],
        retention: String? = nil,
        throttle: Throttle? = nil
    ) {
        self.url = url
        self.kind = kind
        self.name = name
        self.coverURL = coverURL
        self.customType = customType
        self.categories = categories
        self.retention = retention
        self.throttle = throttle
    }

    /// The retention, parsed; `nil` when there is none or it does not parse (`problem()` says so).
    public var retentionPeriod: RetentionPeriod? {
        retention.flatMap(RetentionPeriod.init)
    }

    enum CodingKeys: String, CodingKey {
        case url = "channel_url"
        case kind, name
        case coverURL = "cover_url"
        case customType = "custom_type"
        case categories, retention, throttle
    }

    /// Only `channel_url` and `kind` are required; the rest default to empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(String.self, forKey: .url)
        kind = try container.decode(Kind.self, forKey: .kind)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        coverURL = try container.decodeIfPresent(String.self, forKey: .coverURL) ?? ""
        customType = try container.decodeIfPresent(String.self, forKey: .customType) ?? ""
        categories = try container.decodeIfPresent([Category].self, forKey: .categories) ?? []
        retention = try container.decodeIfPresent(String.self, forKey: .retention)
        throttle = try container.decodeIfPresent(Throttle.self, forKey: .throttle)
    }

    public static let maximumURLLength = 128
    public static let maximumNameLength = 255
    public static let maximumCategories = 50

    /// The first rule this definition breaks, as `(field, message)`; `nil` when it is valid.
    public func problem() -> (field: String, message: String)? {
        if let problem = Self.urlProblem(url) { return ("channel_url", problem) }
        if name.count > Self.maximumNameLength { return ("name", "must be at most \(Self.maximumNameLength) characters") }
        if customType.count > Self.maximumNameLength { return ("custom_type", "must be at most \(Self.maximumNameLength) characters") }
        if !coverURL.isEmpty, !WebURL.isHTTP(coverURL) {
            return ("cover_url", "must be an http(s) URL of at most \(WebURL.maximumLength) characters")
        }
        if categories.count > Self.maximumCategories { return ("categories", "at most \(Self.maximumCategories) categories") }
        var seen = Set<String>()
        for (index, category) in categories.enumerated() {
            if category.id.isEmpty || category.id.count > 64 { return ("categories[\(index)].id", "must be 1–64 characters") }
            if !seen.insert(category.id).inserted { return ("categories[\(index)].id", "duplicates category '\(category.id)'") }
            if category.name.count > Self.maximumNameLength {
                return ("categories[\(index)].name", "must be at most \(Self.maximumNameLength) characters")
            }
        }
        if !categories.isEmpty, categories.filter(\.isDefault).count != 1 {
            return ("categories", "must have exactly one entry with is_default: true")
        }
        if let retention, RetentionPeriod(retention) == nil { return ("retention", RetentionPeriod.problem) }
        if let (field, message) = throttle?.problem() { return ("throttle.\(field)", message) }
        return nil
    }

    /// Channel URLs are 1–128 characters from `A–Z a–z 0–9 . _ ~ -`, so they need no escaping in paths.
    public static func urlProblem(_ url: String) -> String? {
        if url.isEmpty || url.count > maximumURLLength { return "must be 1–\(maximumURLLength) characters" }
        // Path segments a URL resolver removes: a channel so named could not be addressed.
        if url == "." || url == ".." { return "must not be '.' or '..'" }
        let allowed = url.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._~-".unicodeScalars.contains(scalar))
        }
        return allowed ? nil : "may contain only letters, digits and . _ ~ -"
    }
}
