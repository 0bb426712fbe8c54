/// How a notification asks to be pushed, given at send time. Stored with the notification; the
/// refresh and alert push stages read it.
public struct PushOptions: Sendable, Equatable, Codable {
    public enum Priority: String, Sendable, Codable {
        case high, low
    }

    /// Send a visible alert besides the silent refresh.
    public var alert: Bool
    /// Custom alert text instead of the template's push body (at most 500 characters).
    public var text: String?
    /// Whether the alert text is prefixed with the sender's nickname (`{nickname}: {text}`).
    public var includeNickname: Bool
    /// Whether the notification counts toward the badge.
    public var countedInBadge: Bool
    public var sound: String?
    /// A later push with the same id replaces the one shown (`apns-collapse-id`, at most 64 bytes).
    public var collapseID: String?
    public var priority: Priority
    /// Extra top-level payload keys (not `aps` or `herald`, which Herald owns).
    public var custom: [String: JSONValue]
    /// Extra `aps` fields; the ones Herald sets itself cannot be overridden.
    public var aps: [String: JSONValue]
    /// Users who get the alert past Do Not Disturb, snooze and trigger options.
    public var forcePush: [String]
    /// Show the configured generic text instead of the content.
    public var noDetail: Bool
    public var mentionedUserIDs: [String]
    /// The user the notification comes from: their nickname prefixes the alert text, and the payload
    /// names them as `sender`. Without one the notification comes from the service.
    public var senderID: String?

    public init() {
        alert = false
        includeNickname = true
        countedInBadge = true
        priority = .high
        custom = [:]
        aps = [:]
        forcePush = []
        noDetail = false
        mentionedUserIDs = []
    }

    enum CodingKeys: String, CodingKey {
        case alert, text, sound, priority, custom, aps
        case includeNickname = "include_nickname"
        case countedInBadge = "counted_in_badge"
        case collapseID = "collapse_id"
        case forcePush = "force_push"
        case noDetail = "no_detail"
        case mentionedUserIDs = "mentioned_user_ids"
        case senderID = "sender_id"
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        alert = try container.decodeIfPresent(Bool.self, forKey: .alert) ?? alert
        text = try container.decodeIfPresent(String.self, forKey: .text)
        includeNickname = try container.decodeIfPresent(Bool.self, forKey: .includeNickname) ?? includeNickname
        countedInBadge = try container.decodeIfPresent(Bool.self, forKey: .countedInBadge) ?? countedInBadge
        sound = try container.decodeIfPresent(String.self, forKey: .sound)
        collapseID = try container.decodeIfPresent(String.self, forKey: .collapseID)
        priority = try container.decodeIfPresent(Priority.self, forKey: .priority) ?? priority
        custom = try container.decodeIfPresent([String: JSONValue].self, forKey: .custom) ?? [:]
        aps = try container.decodeIfPresent([String: JSONValue].self, forKey: .aps) ?? [:]
        forcePush = try container.decodeIfPresent([String].self, forKey: .forcePush) ?? []
        noDetail = try container.decodeIfPresent(Bool.self, forKey: .noDetail) ?? noDetail
        mentionedUserIDs = try container.decodeIfPresent([String].self, forKey: .mentionedUserIDs) ?? []
        senderID = try container.decodeIfPresent(String.self, forKey: .senderID)
    }

    public static let maximumTextLength = 500
    public static let maximumCollapseIDBytes = 64
    public static let maximumSoundLength = 255
    /// The custom keys and extra `aps` fields together, encoded: they share APNs' 4 KiB payload.
    public static let maximumExtraBytes = 2048
    public static let maximumUserIDs = 10_000
    public static let maximumDepth = 8
    /// `aps` keys Herald sets itself.
    public static let reservedAPSKeys: Set<String> = ["alert", "badge", "sound", "content-available", "mutable-content"]
    /// Top-level payload keys Herald sets itself.
    public static let reservedPayloadKeys: Set<String> = ["aps", "herald"]

    /// The first rule these options break, as `(field, message)` relative to the options object;
    /// `nil` when they are valid.
    public func problem() -> (field: String, message: String)? {
        if let text, text.count > Self.maximumTextLength {
            return ("text", "must be at most \(Self.maximumTextLength) characters")
        }
        if let sound, sound.isEmpty || sound.count > Self.maximumSoundLength {
            return ("sound", "must be 1–\(Self.maximumSoundLength) characters")
        }
        if let collapseID, collapseID.isEmpty || collapseID.utf8.count > Self.maximumCollapseIDBytes {
            return ("collapse_id", "must be 1–\(Self.maximumCollapseIDBytes) bytes")
        }
        if let key = custom.keys.sorted().first(where: Self.reservedPayloadKeys.contains) {
            return ("custom.\(key)", "is set by Herald and cannot be overridden")
        }
        if let key = aps.keys.sorted().first(where: Self.reservedAPSKeys.contains) {
            return ("aps.\(key)", "is set by Herald and cannot be overridden")
        }
        if JSONValue.object(custom).depth > Self.maximumDepth || JSONValue.object(aps).depth > Self.maximumDepth {
            return ("custom", "custom and aps may nest at most \(Self.maximumDepth) levels")
        }
        if JSONValue.object(custom).encodedSize + JSONValue.object(aps).encodedSize > Self.maximumExtraBytes {
            return ("custom", "custom and aps together must encode to at most \(Self.maximumExtraBytes) bytes")
        }
        if let senderID, let problem = UserID.problem(with: senderID) {
            return ("sender_id", problem)
        }
        for (field, ids) in [("force_push", forcePush), ("mentioned_user_ids", mentionedUserIDs)] {
            if ids.count > Self.maximumUserIDs { return (field, "at most \(Self.maximumUserIDs) user ids") }
            if let index = ids.firstIndex(where: { UserID.problem(with: $0) != nil }) {
                return ("\(field)[\(index)]", UserID.problem(with: ids[index])!)
            }
        }
        return nil
    }
}
