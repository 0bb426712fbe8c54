/// One category of a channel with the user's choice: whether its notifications reach their
/// collection (`inbox`) and may alert them (`push`) — their own choice, else the channel's default.
public struct CategoryPreference: Sendable, Equatable, Identifiable {
    /// The category's id.
    public var id: String
    public var name: String
    public var inbox: Bool
    public var push: Bool
    public var inboxDefault: Bool
    public var pushDefault: Bool
    /// Whether `inbox` is the user's own choice rather than the default.
    public var inboxChosen: Bool
    public var pushChosen: Bool

    init(_ wire: Components.Schemas.CategoryPreference) {
        id = wire.id
        name = wire.name
        inbox = wire.inbox
        push = wire.push
        inboxDefault = wire.inboxDefault
        pushDefault = wire.pushDefault
        inboxChosen = wire.inboxChosen
        pushChosen = wire.pushChosen
    }
}
