import HeraldCore

/// What `PUT /v1/users/{user_id}` changes: each field given, the rest kept (a new user gets the
/// defaults). Validated by the caller.
public struct UserChange: Sendable, Equatable {
    public var nickname: String?
    public var profileURL: String?
    /// `.some(nil)` forgets the locale; `nil` keeps it.
    public var locale: String??
    public var timeZone: String?
    /// Merged into the stored properties at the top level: a key given replaces the stored value,
    /// a key given as `null` is removed, keys not given stay.
    public var properties: [String: JSONValue]?

    public init(
        nickname: String? = nil,
        profileURL: String? = nil,
        locale: String?? = nil,
        timeZone: String? = nil,
        properties: [String: JSONValue]? = nil
    ) {
        self.nickname = nickname
        self.profileURL = profileURL
        self.locale = locale
        self.timeZone = timeZone
        self.properties = properties
    }

    /// The most the stored properties may take, as compact JSON text: 16 KiB (the table's check).
    public static let maximumPropertiesBytes = 16 * 1024
}
