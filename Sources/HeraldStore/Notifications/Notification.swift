import Foundation
import HeraldCore

/// Who a notification goes to.
public enum Audience: Sendable, Equatable {
    /// These users (ids, without duplicates), inserted in the sending transaction.
    case targets([String])
    /// Every user at the time of the send, reached in the background in batches.
    case all
    /// The topic's subscribers (by its id) who have not muted it, reached in the background in
    /// batches, each batch from the subscriptions as they are then.
    case topic(String)

    public var name: String {
        switch self {
        case .targets: return "targets"
        case .all: return "all"
        case .topic: return "topic"
        }
    }
}

/// A notification ready to be stored: rendered, validated, addressed.
public struct NotificationDraft: Sendable {
    public var channelURL: String
    public var templateKey: String
    public var templateVersion: Int
    public var variables: [String: JSONValue]
    public var content: RenderedNotification
    public var category: String
    public var tags: [String]
    public var eventDeadline: Date?
    public var push: PushOptions
    public var audience: Audience
    /// Users a broadcast (`all` or a topic) leaves out, by id; ids of no user are ignored.
    public var excluded: [String]
    /// When the notification expires (it leaves every collection, as a delete would); its channel's
    /// retention may make that earlier.
    public var expiresAt: Date?
    /// The template reads the recipient's profile: `content.perUser` holds every target's rendering,
    /// and a broadcast's fan-out renders each user it reaches.
    public var rendersPerRecipient: Bool
    /// Only users in these time zones are reached (a part of a send scheduled for a local time);
    /// `nil`: every user the audience names.
    public var timeZones: [String]?
    /// The cap on how often each recipient hears from the channel: the send's, else the channel's.
    public var throttle: Throttle?
    /// Folds the send into each recipient's open digest with the same key (`sql/0032_digests.sql`).
    public var batch: Batch?

    public init(
        channelURL: String,
        templateKey: String,
        templateVersion: Int,
        variables: [String: JSONValue],
        content: RenderedNotification,
        category: String,
        tags: [String],
        eventDeadline: Date?,
        push: PushOptions,
        audience: Audience,
        excluded: [String] = [],
        expiresAt: Date? = nil,
        rendersPerRecipient: Bool = false,
        throttle: Throttle? = nil,
        batch: Batch? = nil
    ) {
        self.channelURL = channelURL
        self.templateKey = templateKey
        self.templateVersion = templateVersion
        self.variables = variables
        self.content = content
        self.category = category
        self.tags = tags
        self.eventDeadline = eventDeadline
        self.push = push
        self.audience = audience
        self.excluded = excluded
        self.expiresAt = expiresAt
        self.rendersPerRecipient = rendersPerRecipient
        self.timeZones = nil
        self.throttle = throttle
        self.batch = batch
    }

    /// Every user id the send names: its targets and the users it has variables for.
    public var namedUserIDs: [String] {
        var ids = Set(content.perUser.keys)
        if case .targets(let targets) = audience { ids.formUnion(targets) }
        return ids.sorted()
    }
}

/// A notification as stored, with its fan-out progress.
public struct StoredNotification: Sendable, Equatable {
    public enum FanoutState: String, Sendable {
        /// A broadcast (`audience: "all"` or a topic) still has users to reach.
        case running
        /// Every addressed user has a copy.
        case done
    }

    public var id: Int64
    public var channelURL: String
    public var templateKey: String
    public var templateVersion: Int
    public var variables: [String: JSONValue]
    public var data: JSONValue
    public var pushTitle: String?
    public var pushBody: String?
    public var category: String
    public var tags: [String]
    public var eventDeadline: Date?
    public var push: PushOptions
    public var audience: String
    /// The topic a topic send went to (its id, kept after the topic is deleted).
    public var topic: String?
    public var audienceSize: Int64
    public var recipientCount: Int64
    public var fanoutState: FanoutState
    /// When it expires: the earlier of the send's `expires_at` and the end of its channel's retention.
    public var expiresAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// Silent refresh pushes delivered because of this notification.
    public var pushesSent: Int64 = 0
    /// Its rendering in each of its template's variants, by lower-cased language tag:
    /// `{"data", "push_title", "push_body", "actions"}`.
    public var variants: [String: JSONValue] = [:]
    /// The throttle it was sent with (its send's, else its channel's then).
    public var throttle: Throttle?
    /// Its digest settings, when it was sent with a batch.
    public var batch: Batch?
    /// Users it folded into their open digests (who got no copy of it).
    public var batchFolded: Int64 = 0
}

/// Recipients of one notification by status. Statuses only move forward (sent → delivered → read),
/// so each recipient is counted once, under the furthest status it reached.
public struct RecipientCounts: Sendable, Equatable {
    public var sent: Int64
    public var delivered: Int64
    public var read: Int64
    /// Recipients who reported viewing / clicking it (`POST /v1/me/events`), each counted once.
    public var viewed: Int64
    public var clicked: Int64
    /// Recipients who pressed any of its actions, each counted once; and how many pressed each.
    public var acted: Int64
    /// Users a throttle held it back from: its alert, or (a throttle that drops) the notification.
    public var throttled: Int64
    public var actions: [String: Int64]

    public init(
        sent: Int64,
        delivered: Int64,
        read: Int64,
        viewed: Int64 = 0,
        clicked: Int64 = 0,
        acted: Int64 = 0,
        throttled: Int64 = 0,
        actions: [String: Int64] = [:]
    ) {
        self.acted = acted
        self.throttled = throttled
        self.actions = actions
        self.sent = sent
        self.delivered = delivered
        self.read = read
        self.viewed = viewed
        self.clicked = clicked
    }
}

/// One recipient's copy of a notification, for the admin's per-member view.
public struct RecipientStatus: Sendable, Equatable {
    public var userKey: Int64
    public var userID: String
    public var status: CollectionItem.Status
    public var deliveredAt: Date?
    public var readAt: Date?
    public var deleted: Bool
}

/// Why a notification could not be stored or changed.
public enum NotificationStoreError: Error, Sendable, Equatable {
    case unknownChannel
    /// The send names a topic that does not exist.
    case unknownTopic
    /// Addressed user ids that do not exist (in request order, at most `NotificationStore.listedIDLimit`),
    /// and how many there were in all.
    case unknownUsers([String], total: Int)
    /// Per-user variables for users who are not recipients of the notification.
    case notRecipients([String], total: Int)
    /// The notification is still being fanned out to every user; it can change once that is done.
    case fanoutInProgress
    /// The send's fence found nothing: what it was made for (a scheduled send's claim) no longer
    /// holds, so nothing was sent.
    case fenceLost
}
