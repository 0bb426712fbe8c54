import Postgres

/// A statement sent with the session check, in the same round trip, instead of after it: a user
/// route's main lookup, built from the request alone, with the decoder of its answer.
///
/// It is built before anyone knows who is asking, from what the request claims (the user key inside a
/// signed sync token, say), and it runs whatever the check finds. `SessionStore.authenticate(_:alongside:)`
/// hands its answer back only when the session is live and, for a statement that reads a user's data,
/// belongs to `userKey`; anything else is thrown away unread, and the caller runs its lookup the
/// ordinary way.
public struct SessionCompanion<Answer: Sendable>: Sendable {
    /// The user the statement reads for; `nil` for a statement that reads nothing of any user's (a
    /// channel looked up by URL), whose answer any live session may use.
    public let userKey: Int64?
    let query: PostgresQuery
    let decode: @Sendable (PostgresResult) throws -> Answer

    init(userKey: Int64?, query: PostgresQuery, decode: @escaping @Sendable (PostgresResult) throws -> Answer) {
        self.userKey = userKey
        self.query = query
        self.decode = decode
    }

    /// The same statement, its answer passed through `transform`.
    public func map<Other: Sendable>(_ transform: @escaping @Sendable (Answer) -> Other) -> SessionCompanion<Other> {
        let decode = self.decode
        return SessionCompanion<Other>(userKey: userKey, query: query) { transform(try decode($0)) }
    }
}
