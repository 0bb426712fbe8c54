import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    static var scheduledPageSize: Int { 50 }

    func registerScheduled(on console: RouterGroup<Context>) {
        console.get("scheduled") { request, _ in
            let session = try await requireSession(request)
            return try await scheduledPage(request, session: session, problem: nil)
        }
        console.post("scheduled/{id}/cancel") { request, context in
            let (_, session) = try await requireForm(ButtonForm.self, request, context: context)
            let id = try context.parameters.require("id")
            let answer = try await actions.cancelScheduledSend(id)
            guard answer.succeeded else { return try await scheduledPage(request, session: session, problem: Self.apiMessage(answer)) }
            return Self.redirect("/console/scheduled?notice=Cancelled")
        }
    }

    /// Scheduled sends of one state (waiting, unless the query says otherwise), with when each is
    /// due and what it made.
    private func scheduledPage(_ request: Request, session: ConsoleSessionStore.Session, problem: String?) async throws -> Response {
        let query = request.uri.queryParameters
        let state = query["state"].flatMap { ScheduledSend.State(rawValue: String($0)) }
        let all = query["state"] == "all"
        let after = query["after"].flatMap { Int64(String($0)) }
        let found = try await schedules.list(state: all ? nil : state ?? .scheduled, after: after, limit: Self.scheduledPageSize)
        let shownState = all ? "all" : (state ?? .scheduled).rawValue
        return page(
            "scheduled",
            title: "Scheduled sends",
            section: .scheduled,
            session: session,
            status: problem == nil ? .ok : .unprocessableContent,
            values: [
                "schedules": found.map { schedule -> [String: Any] in
                    let when: String
                    switch schedule.timing {
                    case .at(let instant): when = RFC3339.string(from: instant)
                    case .local(let time): when = "\(time) in each recipient's zone"
                    }
                    return [
                        "id": schedule.id, "when": when, "repeat": schedule.repeats?.rawValue ?? false,
                        "next": schedule.state == .scheduled ? RFC3339.string(from: schedule.nextAt) : false,
                        "template": schedule.templateKey, "channel": schedule.channelURL, "audience": schedule.audience,
                        "state": schedule.state.rawValue, "waiting": schedule.state == .scheduled,
                        "zones": schedule.zonesDone.isEmpty ? false : schedule.zonesDone.joined(separator: ", "),
                        "notifications": schedule.notificationIDs.map { ["id": $0] },
                        "error": schedule.error ?? false,
                    ]
                },
                "states": ["scheduled", "sent", "canceled", "failed", "all"].map { ["state": $0, "current": $0 == shownState] },
                "state": shownState,
                "empty": found.isEmpty && after == nil,
                "next": found.count == Self.scheduledPageSize ? (found.last.map { String($0.id) } as Any? ?? false) : false,
                "problem": problem ?? false,
                "notice": Self.notice(request),
            ]
        )
    }
}
