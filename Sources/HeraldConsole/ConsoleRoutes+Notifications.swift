import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    static var notificationsPageSize: Int { 50 }
    static var recipientsPageSize: Int { 50 }

    func registerNotifications(on console: RouterGroup<Context>) {
        console.get("notifications") { request, _ in
            let session = try await requireSession(request)
            let before = request.uri.queryParameters["before"].flatMap { Int64($0) }
            let sent = try await notifications.recent(before: before, limit: Self.notificationsPageSize)
            return page(
                "notifications",
                title: "Notifications",
                section: .notifications,
                session: session,
                values: [
                    "notifications": sent.map { item -> [String: Any] in
                        [
                            "id": item.id, "channel": item.channelURL, "template": item.templateKey, "audience": item.audience,
                            "recipients": item.recipientCount, "size": item.audienceSize, "pushes": item.pushesSent,
                            "state": item.deleted ? "deleted" : item.fanoutRunning ? "fanning out" : "sent",
                            "created": item.createdAt.formatted(.iso8601),
                        ]
                    },
                    "empty": sent.isEmpty && before == nil,
                    "next": sent.count == Self.notificationsPageSize ? (sent.last?.id as Any? ?? false) : false,
                ]
            )
        }
        console.get("notifications/{id}") { request, context in
            let session = try await requireSession(request)
            let id = try Self.notificationID(context)
            guard let stored = try await notificationStore.get(id) else { throw Self.noNotification }
            let after = request.uri.queryParameters["after"].flatMap { Int64($0) }
            let members = try await notificationStore.members(id, after: after, limit: Self.recipientsPageSize)
            var values = try await funnel(stored)
            values.merge(
                [
                    "id": id, "channel": stored.channelURL, "template": stored.templateKey, "version": stored.templateVersion,
                    "audience": stored.audience, "created": stored.createdAt.formatted(.iso8601),
                    "data": TemplatePreview.pretty(stored.data),
                    "batch": stored.batch.map { batch -> [String: Any] in
                        ["key": batch.key, "window": batch.window, "alert": batch.alert.rawValue, "folded": stored.batchFolded]
                    } ?? false,
                    "variants": stored.variants.sorted { $0.key < $1.key }.map { tag, rendered in
                        ["tag": tag, "definition": TemplatePreview.pretty(rendered)]
                    },
                    "recipients": members.map { member -> [String: Any] in
                        [
                            "user": member.userID, "status": member.deleted ? "deleted" : member.status.name.lowercased(),
                            "delivered": member.deliveredAt?.formatted(.iso8601) ?? "—", "read": member.readAt?.formatted(.iso8601) ?? "—",
                        ]
                    },
                    "noRecipients": members.isEmpty && after == nil,
                    "nextRecipients": members.count == Self.recipientsPageSize ? (members.last?.userKey as Any? ?? false) : false,
                ]
            ) { $1 }
            return page("notification", title: "Notification \(id)", section: .notifications, session: session, values: values)
        }
        // The progress and funnel alone, which the page's script fetches every few seconds.
        console.get("notifications/{id}/funnel") { request, context in
            _ = try await requireSession(request)
            let id = try Self.notificationID(context)
            guard let stored = try await notificationStore.get(id) else { throw Self.noNotification }
            return Self.html(site.fragment("notification-funnel", values: try await funnel(stored)))
        }
    }

    static var noNotification: ConsoleRefusal { ConsoleRefusal(.notFound, "There is no notification with this id.") }

    static func notificationID(_ context: Context) throws -> Int64 {
        guard let id = Int64(try context.parameters.require("id")), id > 0 else { throw noNotification }
        return id
    }

    /// Fan-out progress and the funnel: every recipient, then those whose device got it, read it,
    /// clicked it (each status counts everyone who got at least that far), and views and the users
    /// who pressed its actions beside.
    private func funnel(_ stored: StoredNotification) async throws -> [String: Any] {
        let counts = try await notificationStore.counts(stored.id)
        let recipients = counts.sent + counts.delivered + counts.read
        let chart = FunnelChart(steps: [
            ("Recipients", recipients), ("Delivered", counts.delivered + counts.read), ("Read", counts.read), ("Clicked", counts.clicked),
        ])
        let running = stored.fanoutState == .running
        return [
            "funnelID": stored.id,
            "running": running,
            "reached": stored.recipientCount, "audienceSize": stored.audienceSize,
            "progress": stored.audienceSize == 0 ? 100 : Int(stored.recipientCount * 100 / max(1, stored.audienceSize)),
            "funnel": chart.svg,
            "recipientsCount": recipients, "delivered": counts.delivered + counts.read, "readCount": counts.read,
            "clicked": counts.clicked, "viewed": counts.viewed, "pushes": stored.pushesSent, "acted": counts.acted,
            "throttled": counts.throttled,
            "actionCounts": counts.actions.keys.sorted().map { ["id": $0, "count": counts.actions[$0]!] as [String: Any] },
        ]
    }
}
