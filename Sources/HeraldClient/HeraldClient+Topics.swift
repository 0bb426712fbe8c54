extension HeraldClient {
    /// The topics the signed-in user is subscribed to, in id order: every page, read now.
    public func topics() async throws -> [HeraldTopic] {
        var all: [HeraldTopic] = []
        var after: String?
        repeat {
            let page = try await api.topics(after: after)
            all += page.topics
            after = page.next
        } while after != nil
        return all
    }

    /// Follows a topic users may subscribe to themselves (otherwise the server answers 403
    /// `topic_not_self_subscribe`). Following one the user already has changes nothing.
    @discardableResult
    public func follow(topic: String) async throws -> HeraldTopic {
        try await api.follow(topic: topic, muted: nil)
    }

    /// Mutes or unmutes a topic the user is subscribed to, however they came to be: a muted topic's
    /// sends give them nothing. A topic users may follow themselves is followed first if need be.
    @discardableResult
    public func setMuted(_ muted: Bool, topic: String) async throws -> HeraldTopic {
        try await api.follow(topic: topic, muted: muted)
    }

    /// Unfollows a topic users may subscribe to themselves.
    public func unfollow(topic: String) async throws {
        try await api.unfollow(topic: topic)
    }
}
