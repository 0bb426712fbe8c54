public import Foundation

/// A topic the user is subscribed to ("everyone watching order A-1"): sends to it reach the user
/// unless they muted it.
public struct HeraldTopic: Sendable, Equatable, Identifiable {
    /// The topic's id (`order:A-1`).
    public var id: String
    public var name: String
    /// Whether the user may unfollow it; the app's own topics can only be muted.
    public var canUnfollow: Bool
    /// A muted topic's sends give the user nothing.
    public var isMuted: Bool
    public var subscribedAt: Date

    public init(id: String, name: String, canUnfollow: Bool, isMuted: Bool, subscribedAt: Date) {
        self.id = id
        self.name = name
        self.canUnfollow = canUnfollow
        self.isMuted = isMuted
        self.subscribedAt = subscribedAt
    }

    init(_ wire: Components.Schemas.MyTopic) {
        self.init(id: wire.topicId, name: wire.name, canUnfollow: wire.selfSubscribe, isMuted: wire.muted, subscribedAt: wire.subscribedAt)
    }
}
