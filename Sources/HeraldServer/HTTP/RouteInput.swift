import HeraldStore

/// What a user route reads from its request, parsed once, before the session check, and the lookup it
/// sends with that check (see `RouteRegistry.add(_:_:parse:use:)`).
protocol RouteInput: Sendable {
    associatedtype Answer: Sendable

    /// The route's main lookup, built from the request alone; `nil` sends none.
    var companion: SessionCompanion<Answer>? { get }
}
