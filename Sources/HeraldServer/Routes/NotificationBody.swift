import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// A notification as the admin API shows it.
struct NotificationBody: ResponseEncodable {
    struct Fanout: Encodable {
        var state: String
        /// Users the send addressed (for `all`: every user at the time of the send).
        var audienceSize: Int64
        /// Users who have their copy so far.
        var reached: Int64

        enum CodingKeys: String, CodingKey {
            case state
            case audienceSize = "audience_size"
            case reached
        }
    }

    struct Counts: Encodable {
        var recipients: Int64
        var sent: Int64
        var delivered: Int64
        var read: Int64
        /// Silent refresh pushes APNs accepted because of this notification.
        var pushed: Int64
        /// Recipients who reported viewing / clicking it.
        var viewed: Int64
        var clicked: Int64
        /// Recipients who pressed any of its actions, and how many pressed each.
        var acted: Int64
        /// Users its throttle held back from: their alert (silence) or their copy (drop).
        var throttled: Int64
        var actions: [String: Int64]
    }

    /// One recipient's copy (`?members=true`).
    struct Member: Encodable {
        var userID: String
        var status: String
        var deliveredAt: String?
        var readAt: String?
        var deleted: Bool

        init(_ member: RecipientStatus) {
            userID = member.userID
            status = member.status.name
            deliveredAt = member.deliveredAt.map(RFC3339.string)
            readAt = member.readAt.map(RFC3339.string)
            deleted = member.deleted
        }

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case status
            case deliveredAt = "delivered_at"
            case readAt = "read_at"
            case deleted
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userID, forKey: .userID)
            try container.encode(status, forKey: .status)
            // Present as null: "not yet" is an answer.
            try container.encode(deliveredAt, forKey: .deliveredAt)
            try container.encode(readAt, forKey: .readAt)
            try container.encode(deleted, forKey: .deleted)
        }
    }

    var id: String
    var channelURL: String
    var templateKey: String
    var templateVersion: Int
    var variables: [String: JSONValue]
    var data: JSONValue
    var pushTitle: String?
    var pushBody: String?
    /// Its rendering in each of its template's variants; absent when the template has none.
    var variants: [String: JSONValue]?
    var category: String
    var tags: [String]
    var eventDeadline: String?
    /// When it leaves every collection: the send's `expires_at` or its channel's retention, the earlier.
    var expiresAt: String?
    var push: PushOptions
    /// The throttle it was sent with; absent when none.
    var throttle: Throttle?
    /// Its digest settings and how many users it folded into their digests; absent when it was
    /// sent without a batch.
    var batch: BatchBody?
    var audience: String
    /// The topic a topic send went to; absent for other sends.
    var topic: String?
    var fanout: Fanout
    var counts: Counts?
    var members: [Member]?
    /// With `members`: the `after` of the next page of members, absent on the last one.
    var nextCursor: String?
    var createdAt: String
    var updatedAt: String

    init(_ stored: StoredNotification, counts: RecipientCounts? = nil) {
        id = String(stored.id)
        channelURL = stored.channelURL
        templateKey = stored.templateKey
        templateVersion = stored.templateVersion
        variables = stored.variables
        data = stored.data
        pushTitle = stored.pushTitle
        pushBody = stored.pushBody
        variants = stored.variants.isEmpty ? nil : stored.variants
        category = stored.category
        tags = stored.tags
        eventDeadline = stored.eventDeadline.map(RFC3339.string)
        expiresAt = stored.expiresAt.map(RFC3339.string)
        push = stored.push
        throttle = stored.throttle
        batch = stored.batch.map { BatchBody(settings: $0, folded: stored.batchFolded) }
        audience = stored.audience
        topic = stored.topic
        fanout = Fanout(state: stored.fanoutState.rawValue, audienceSize: stored.audienceSize, reached: stored.recipientCount)
        self.counts = counts.map {
            Counts(
                recipients: $0.sent + $0.delivered + $0.read,
                sent: $0.sent,
                delivered: $0.delivered,
                read: $0.read,
                pushed: stored.pushesSent,
                viewed: $0.viewed,
                clicked: $0.clicked,
                acted: $0.acted,
                throttled: $0.throttled,
                actions: $0.actions
            )
        }
        createdAt = RFC3339.string(from: stored.createdAt)
        updatedAt = RFC3339.string(from: stored.updatedAt)
    }

    enum CodingKeys: String, CodingKey {
        case id
        case channelURL = "channel_url"
        case templateKey = "template_key"
        case templateVersion = "template_version"
        case variables, data
        case pushTitle = "push_title"
        case pushBody = "push_body"
        case variants, category, tags
        case eventDeadline = "event_deadline"
        case expiresAt = "expires_at"
        case push, throttle, batch, audience, topic, fanout, counts, members
        case nextCursor = "next"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// The body as JSON bytes, the form kept for idempotent replays.
    func encoded() throws -> [UInt8] {
        Array(try CanonicalJSON.encoder.encode(self))
    }
}

/// A notification's digest settings, as the API shows them.
struct BatchBody: Codable, Sendable, Equatable {
    var settings: Batch
    /// Users the send folded into a digest they already had (they got no copy of this one).
    var folded: Int64

    enum CodingKeys: String, CodingKey {
        case folded
    }

    init(settings: Batch, folded: Int64) {
        self.settings = settings
        self.folded = folded
    }

    init(from decoder: any Decoder) throws {
        settings = try Batch(from: decoder)
        folded = try decoder.container(keyedBy: CodingKeys.self).decode(Int64.self, forKey: .folded)
    }

    func encode(to encoder: any Encoder) throws {
        try settings.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(folded, forKey: .folded)
    }
}
