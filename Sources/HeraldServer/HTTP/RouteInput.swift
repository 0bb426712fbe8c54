import HeraldStore

/// What a user route reads from its request, parsed once, before the session check, and the lookup it
/// sends with that check (see `RouteRegistry.add(_:_:parse:use:)`).
protocol RouteInput: Sendable {
    associatedtype Answer: Sendable

    /// The route's main lookup, built from the request alone; `nil` sends none.
    var companion: SessionCompanion<Answer>? { get }

    /// True when the handler needs nothing from the database beyond `answer`: it then runs where the
    /// session check did — on the connection's event loop when that loop has a database connection of
    /// its own — instead of moving to the database threads (see `RouteRegistry.add(_:_:parse:use:)`).
    func isAnswered(by answer: Answer?) -> Bool
}

extension RouteInput {
    func isAnswered(by answer: Answer?) -> Bool { false }
}
