import Foundation

/// A user of the customer's application, as Herald knows it.
public struct User: Sendable, Equatable {
    public var id: String
    public var nickname: String
    public var profileURL: String
    public var createdAt: Date
    public var updatedAt: Date
}
