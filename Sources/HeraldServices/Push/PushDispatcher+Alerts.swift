import Foundation
import HeraldCore
import HeraldStore
import Metrics

extension PushDispatcher {
    /// The alert half of a round: decide who gets each new alert (`AlertDecision`, at this moment, in
    /// each user's preferences), claim due alerts, send, record. True when it found work.
    func runAlertRound(_ lane: Lane) async throws -> Bool {
        let alerts = AlertStore(client: store.client)
        let preferences = PushPreferenceStore(client: store.client)
        var expanded = 0
        while case let count = try await alerts.expand(limit: 20, decide: { Self.decide($0, at: Date()) }), count > 0 {
            expanded += count
        }
        if expanded > 0 { wakeOthers(than: lane) }
        let claims = try await alerts.claimDue(service: lane.service, limit: settings.batchSize, lease: settings.lease, policy: settings.multiDevice)
        guard !claims.isEmpty else { return expanded > 0 }
        let messages = try await alertMessages(for: claims, alerts: alerts, preferences: preferences)
        let results = await sendAll(messages, kind: "alert", lane: lane)
        try await alerts.recordDelivered(results.filter { $0.1.outcome == .delivered }.map(\.0))
        try await recordUndelivered(
            results,
            kind: "alert",
            service: lane.service,
            attempts: \.attempts,
            retry: { try await alerts.recordRetry($0, after: $1) },
            fail: { try await alerts.recordFailure($0, status: $1, reason: $2, removeToken: $3, invalidSince: $4) }
        )
        return true
    }

    /// Each candidate's decision now: whether their preferences (and the throttle) let the alert
    /// through, and whether forced.
    static func decide(_ candidates: [AlertCandidate], at now: Date) -> [AlertDecision] {
        candidates.map { candidate in
            let decision = AlertDecision.decide(
                preferences: candidate.preferences,
                channelOption: candidate.channelOption,
                mentioned: candidate.mentioned,
                forced: candidate.forced,
                categoryPush: candidate.categoryPush,
                throttled: candidate.throttled,
                at: now
            )
            if decision == .suppressed(.throttled) { throttledAlerts.increment() }
            return decision
        }
    }

    static let throttledAlerts = Counter(label: "herald_alerts_throttled_total")

    /// Each claim's alert: text and title, sound, badge, the seed-format `herald` object.
    private func alertMessages(
        for claims: [AlertClaim],
        alerts: AlertStore,
        preferences: PushPreferenceStore
    ) async throws -> [(AlertClaim, PushMessage)] {
        let users = Array(Set(claims.map(\.userKey)))
        let summaries = try await store.refreshSummaries(userKeys: users)
        let uncounted = try await alerts.uncountedUnread(userKeys: users)
        let sounds = try await preferences.preferences(userKeys: users).mapValues(\.sound)
        let people = try await alerts.people(ids: Array(Set(claims.flatMap { [$0.push.senderID].compactMap { $0 } + $0.push.mentionedUserIDs })))
        let expiration = Int64(Date().timeIntervalSince1970) + settings.expiration.components.seconds
        return claims.map { claim in
            let channels = summaries[claim.userKey] ?? []
            let unread = max(0, channels.reduce(0) { $0 + $1.unread } - (uncounted[claim.userKey] ?? 0))
            let sender = claim.push.senderID.flatMap { id in
                people[id].map { AlertPayload.Content.Person(id: id, name: $0.nickname, profileURL: $0.profileURL) }
            }
            let text: String
            let title: String?
            if claim.push.noDetail {
                (text, title) = (settings.noDetailText, nil)
            } else {
                text = claim.push.text ?? claim.pushBody ?? claim.dataTitle ?? settings.noDetailText
                title = claim.pushTitle
            }
            var content = AlertPayload.Content(
                notificationID: claim.notificationID,
                createdAtMilliseconds: RFC3339.milliseconds(from: claim.createdAt),
                appID: settings.appID,
                title: title,
                text: text,
                includeNickname: claim.push.includeNickname && !claim.push.noDetail,
                type: sender == nil ? "ADMM" : "MESG",
                customType: claim.category,
                channelURL: claim.channel.url,
                channelName: claim.channel.name,
                channelCustomType: claim.channel.customType,
                channelType: claim.channel.kind.rawValue,
                channelUnreadCount: channels.first { $0.url == claim.channel.url }?.unread ?? 0,
                unreadMessageCount: unread,
                badge: settings.badge ? min(unread, Int64(settings.badgeCap ?? Int.max)) : nil,
                sound: claim.push.sound ?? (sounds[claim.userKey] ?? nil) ?? "default",
                sender: sender,
                recipient: .init(id: claim.recipientID, name: claim.recipientNickname),
                mentionedUsers: claim.push.mentionedUserIDs.compactMap { id in
                    people[id].map { .init(id: id, name: $0.nickname, profileURL: $0.profileURL) }
                },
                audienceType: claim.audience,
                extraAPS: claim.push.aps,
                custom: claim.push.custom
            )
            content.mediaURL = claim.mediaURL
            let alert = PushMessage.Content.alert(content, priority: claim.push.priority, collapseID: claim.push.collapseID)
            return (claim, PushMessage(address: claim.address, userKey: claim.userKey, content: alert, expiration: expiration))
        }
    }
}
