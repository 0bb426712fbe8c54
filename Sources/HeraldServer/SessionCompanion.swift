import Hummingbird
import Postgres

/// A statement a user route sends together with its session check, in one round trip, instead of
/// after it: the route's main lookup, built from the request alone.
///
/// It is built before anyone knows who is asking, from what the request claims (the user key inside a
/// signed sync token, say), and it runs whatever the check finds. Its answer reaches the handler only
/// when the session is live and, for a statement that reads a user's data, belongs to `userKey` (see
/// `RouteRegistry.add`); anything else is thrown away unread, and the handler runs its lookup the
/// ordinary way.
struct SessionCompanion: Sendable {
    /// The user the statement reads for; `nil` for a statement that reads nothing of any user's (a
    /// channel looked up by URL), whose answer any live session may use.
    var userKey: Int64?
    var query: PostgresQuery
    /// What was asked, so that the handler can tell the answer is to its own question.
    var question: any Hashable & Sendable

    /// Builds a route's companion from a request; `nil` sends none. Runs before authentication, so it
    /// must neither throw nor answer: a request it cannot make sense of goes without, and the handler
    /// refuses it after the session check as usual.
    typealias Builder = @Sendable (Request, HeraldRequestContext) async -> SessionCompanion?

    /// A companion's rows, handed to the handler of an authenticated request.
    struct Answer: Sendable {
        var question: any Hashable & Sendable
        var rows: PostgresResult

        /// The rows, if they answer `question`.
        func rows<Question: Hashable & Sendable>(for question: Question) -> PostgresResult? {
            (self.question as? Question) == question ? rows : nil
        }
    }
}
