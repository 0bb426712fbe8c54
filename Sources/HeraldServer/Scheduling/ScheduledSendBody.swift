import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// A scheduled send as the admin API shows it.
struct ScheduledSendBody: ResponseEncodable {
    var id: String
    var state: String
    var sendAt: String?
    var deliverAtLocal: String?
    var repeats: String?
    var nextAt: String?
    var channelURL: String
    var templateKey: String
    var audience: String
    /// The send's body, as `POST /v1/notifications` takes it.
    var request: JSONValue
    var occurrence: Int
    var zonesDone: [String]
    var notificationIDs: [String]
    var error: String?
    var createdAt: String
    var updatedAt: String

    init(_ stored: ScheduledSend) {
        id = String(stored.id)
        state = stored.state.rawValue
        switch stored.timing {
        case .at(let instant): sendAt = RFC3339.string(from: instant)
        case .local(let time): deliverAtLocal = time.description
        }
        repeats = stored.repeats?.rawValue
        nextAt = stored.state == .scheduled ? RFC3339.string(from: stored.nextAt) : nil
        channelURL = stored.channelURL
        templateKey = stored.templateKey
        audience = stored.audience
        request = (try? JSONDecoder().decode(JSONValue.self, from: Data(stored.request))) ?? .object([:])
        occurrence = stored.occurrence
        zonesDone = stored.zonesDone
        notificationIDs = stored.notificationIDs.map(String.init)
        error = stored.error
        createdAt = RFC3339.string(from: stored.createdAt)
        updatedAt = RFC3339.string(from: stored.updatedAt)
    }

    /// The body as JSON bytes, the form kept for idempotent replays.
    func encoded() throws -> [UInt8] {
        Array(try CanonicalJSON.encoder.encode(self))
    }

    enum CodingKeys: String, CodingKey {
        case id, state
        case sendAt = "send_at"
        case deliverAtLocal = "deliver_at_local"
        case repeats = "repeat"
        case nextAt = "next_at"
        case channelURL = "channel_url"
        case templateKey = "template_key"
        case audience, request, occurrence
        case zonesDone = "zones_done"
        case notificationIDs = "notification_ids"
        case error
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// A page of scheduled sends.
struct ScheduledSendListBody: ResponseEncodable {
    var scheduledSends: [ScheduledSendBody]
    var next: String?

    enum CodingKeys: String, CodingKey {
        case scheduledSends = "scheduled_sends"
        case next
    }
}
