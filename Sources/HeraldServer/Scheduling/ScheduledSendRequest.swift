import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The body of `POST /v1/scheduled-sends`: a send's body (`POST /v1/notifications`) with when to
/// make it — `send_at` (an instant) or `deliver_at_local` (a wall-clock time in each recipient's
/// time zone) — and whether to repeat it.
struct ScheduledSendRequest: Decodable, Sendable {
    var send: SendNotificationRequest
    var sendAt: String?
    var deliverAtLocal: String?
    var repeats: String?

    enum CodingKeys: String, CodingKey {
        case sendAt = "send_at"
        case deliverAtLocal = "deliver_at_local"
        case repeats = "repeat"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sendAt = try container.decodeIfPresent(String.self, forKey: .sendAt)
        deliverAtLocal = try container.decodeIfPresent(String.self, forKey: .deliverAtLocal)
        repeats = try container.decodeIfPresent(String.self, forKey: .repeats)
        send = try SendNotificationRequest(from: decoder)
    }

    /// A digest of the request for its `Idempotency-Key`: the send in its canonical form and when to
    /// make it, under a name of its own, so that no send to `POST /v1/notifications` digests the same.
    /// `send_at` counts as the instant it names: the same moment written with another offset or
    /// precision is the same request.
    func canonicalDigest() throws -> [UInt8] {
        let instant = sendAt.map { text in RFC3339.date(from: text).map { String(RFC3339.milliseconds(from: $0)) } ?? text }
        let timing = [instant ?? "", deliverAtLocal ?? "", repeats ?? ""].joined(separator: "\n")
        return SHA256.digest(Array("scheduled-send\n\(timing)\n".utf8) + Array(try CanonicalJSON.encoder.encode(send)))
    }

    /// How far in the past a send may be scheduled (a clock a little behind, a slow request): it is
    /// then made at once. Further back is refused.
    static let grace: TimeInterval = 60
    /// How far ahead a send may be scheduled.
    static let horizon: TimeInterval = 366 * 86_400

    /// When it sends, whether it repeats, when it is first due, and the moment its checks take as
    /// the time of the send (for a local time, the last zone's: `expires_at` must be after it).
    func validate(
        now: Date
    ) throws(APIError) -> (
        timing: ScheduledSend.Timing, repeats: ScheduledSend.Repeat?, firstDue: Date, sendTime: Date
    ) {
        var repeating: ScheduledSend.Repeat?
        if let repeats {
            guard let known = ScheduledSend.Repeat(rawValue: repeats) else {
                throw Self.invalid("repeat must be \"daily\" or \"weekly\", not \"\(repeats.prefix(32))\".")
            }
            repeating = known
        }
        switch (sendAt, deliverAtLocal) {
        case (let text?, nil):
            guard let instant = RFC3339.date(from: text) else {
                throw Self.invalid("send_at must be an RFC 3339 date-time with an offset, such as 2026-12-01T09:00:00Z.")
            }
            try Self.check(instant, latest: instant, now: now, field: "send_at")
            return (.at(instant), repeating, max(instant, now), max(instant, now))
        case (nil, let text?):
            guard let local = LocalDateTime(text) else {
                throw Self.invalid("deliver_at_local must be a date and time without an offset, such as 2026-12-01T09:00.")
            }
            // Due first where the day begins (UTC+14); passed only once it has passed everywhere.
            let first = local.instant(in: LocalDateTime.firstZone)
            let last = local.instant(in: LocalDateTime.lastZone)
            try Self.check(first, latest: last, now: now, field: "deliver_at_local")
            return (.local(local), repeating, max(first, now), max(last, now))
        case (nil, nil):
            throw Self.invalid("Give send_at (an instant) or deliver_at_local (a time in each recipient's time zone).")
        case (.some, .some):
            throw Self.invalid("Give send_at or deliver_at_local, not both.")
        }
    }

    static func check(_ earliest: Date, latest: Date, now: Date, field: String) throws(APIError) {
        guard latest >= now.addingTimeInterval(-grace) else {
            throw APIError(
                .badRequest,
                code: "schedule_in_past",
                message:
                    "\(field) has passed\(earliest == latest ? "" : " in every time zone"); a send may be scheduled at most \(Int(grace)) seconds in the past."
            )
        }
        guard earliest <= now.addingTimeInterval(horizon) else {
            throw invalid("\(field) is more than \(Int(horizon / 86_400)) days ahead.")
        }
    }

    static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_schedule", message: message)
    }
}
