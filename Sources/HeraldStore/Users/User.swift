import Foundation
import HeraldCore

/// A user of the customer's application, as Herald knows it.
public struct User: Sendable, Equatable {
    public var id: String
    public var nickname: String
    public var profileURL: String
    /// A BCP 47 language tag (`de-CH`); `nil` when the customer never said.
    public var locale: String?
    /// An IANA time zone; Do Not Disturb windows are read in it.
    public var timeZone: String
    /// The customer's own properties: a JSON object with keys of `UserChange.propertyKeyRule`.
    public var properties: [String: JSONValue]
    public var createdAt: Date
    public var updatedAt: Date
}

extension User {
    /// What templates read of this user.
    public var profile: RecipientProfile {
        RecipientProfile(id: id, nickname: nickname, profileURL: profileURL, locale: locale, timeZone: timeZone, properties: properties)
    }
}
