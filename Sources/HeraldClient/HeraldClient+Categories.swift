extension HeraldClient {
    /// The channel's categories with the signed-in user's choices: whether each reaches their
    /// collection and may alert them.
    public func categoryPreferences(channelURL: String) async throws -> [CategoryPreference] {
        try await api.categoryPreferences(channelURL: channelURL)
    }

    /// Chooses whether a category's notifications reach the user's collection (`inbox`) and may alert
    /// them (`push`); `nil` leaves that one as it is. Applies to notifications sent afterwards: a
    /// category turned off for the inbox is not delivered to the user at all.
    @discardableResult
    public func setCategoryPreference(
        channelURL: String,
        category: String,
        inbox: Bool? = nil,
        push: Bool? = nil
    ) async throws
        -> CategoryPreference
    {
        try await api.setCategoryPreference(channelURL: channelURL, category: category, inbox: inbox, push: push)
    }
}
