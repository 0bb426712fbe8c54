import Foundation

/// A topic: a key with subscribers that a send can target (`"topic": "order:A-1"`).
public struct Topic: Sendable, Equatable {
    public var id: String
    public var name: String
    /// Whether users may follow and unfollow it themselves; otherwise only the admin API adds and
    /// removes subscribers (a subscriber may still mute it).
    public var selfSubscribe: Bool
    public var createdAt: Date
    public var updatedAt: Date
}

/// One user's subscription to a topic.
public struct TopicSubscription: Sendable, Equatable {
    /// The user's internal key: the order subscribers are listed in, and the cursor of a page.
    public var userKey: Int64
    public var userID: String
    public var topic: Topic
    /// A muted subscription gets nothing from sends to the topic.
    public var muted: Bool
    public var subscribedAt: Date
}

/// How many users a topic has, and how many of them muted it.
public struct TopicCounts: Sendable, Equatable {
    public var subscribers: Int64
    public var muted: Int64
}

/// Why a topic change could not be made.
public enum TopicStoreError: Error, Sendable, Equatable {
    case unknownTopic
    /// Subscriber ids that name no user (in request order, at most `NotificationStore.listedIDLimit`),
    /// and how many there were in all.
    case unknownUsers([String], total: Int)
    /// The topic's subscribers are chosen by the app: a user cannot follow or unfollow it themselves.
    case notSelfSubscribe
}
