import Foundation
import HTTPTypes
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird

/// Admin routes for sends that wait for their time: schedule one, list them, read one, cancel what
/// has not been sent. The `SchedulerService` makes them when they are due.
struct ScheduledSendsController: Sendable {
    let schedules: ScheduleStore
    /// Checks a send's body as `POST /v1/notifications` does.
    let notifications: NotificationsController
    /// Wakes the scheduler: a new send may be due before anything it waits for.
    let wake: WakeSignal

    func register(in routes: RouteRegistry) {
        routes.add(.post, "/v1/scheduled-sends", access: .admin) { request, context in
            guard
                let body = try await RequestBody.decode(
                    ScheduledSendRequest.self,
                    from: request,
                    context: context,
                    limit: NotificationsController.maximumBodySize
                )
            else {
                throw ScheduledSendRequest.invalid("The body is a send's, with send_at or deliver_at_local.")
            }
            let idempotency = try NotificationsController.idempotencyKey(request) { try body.canonicalDigest() }
            return try Self.response(try await schedule(body, idempotency: idempotency, now: Date()))
        }
        routes.add(.get, "/v1/scheduled-sends", access: .admin) { request, _ in
            let page = try PageRequest(request)
            var after: Int64?
            if let text = page.after {
                guard let id = CanonicalInteger.id(text) else {
                    throw APIError(.badRequest, code: "invalid_after", message: "after must be the next value of a previous page.")
                }
                after = id
            }
            var state: ScheduledSend.State?
            if let text = request.uri.queryParameters["state"] {
                guard let known = ScheduledSend.State(rawValue: String(text)) else {
                    throw APIError(.badRequest, code: "invalid_state", message: "state must be scheduled, sent, canceled or failed.")
                }
                state = known
            }
            let list = try await schedules.list(state: state, after: after, limit: page.limit)
            return ScheduledSendListBody(
                scheduledSends: list.map(ScheduledSendBody.init),
                next: list.count == page.limit ? list.last.map { String($0.id) } : nil
            )
        }
        routes.add(.get, "/v1/scheduled-sends/{scheduled_send_id}", access: .admin) { _, context in
            guard let found = try await schedules.get(try Self.id(context)) else { throw Self.notFound }
            return ScheduledSendBody(found)
        }
        routes.add(.delete, "/v1/scheduled-sends/{scheduled_send_id}", access: .admin) { _, context in
            try await cancel(try Self.id(context))
        }
    }

    /// Cancels what the scheduled send has not made yet.
    func cancel(_ id: Int64) async throws -> ScheduledSendBody {
        switch try await schedules.cancel(id, now: Date()) {
        case .canceled(let canceled): return ScheduledSendBody(canceled)
        case .notFound: throw Self.notFound
        case .finished(let found):
            throw APIError(
                .conflict,
                code: "schedule_finished",
                message: "This scheduled send is \(found.state.rawValue); nothing is left to cancel."
            )
        case .sending:
            throw APIError(.conflict, code: "schedule_sending", message: "This scheduled send is being made now; cancel what remains once it is.")
        }
    }

    /// Checks the send as it would be made at its time (channel, template, variables, audience), and
    /// stores it. A retry with the idempotency key of an earlier request is answered as that one was,
    /// before anything is checked: its time may have passed since.
    func schedule(_ body: ScheduledSendRequest, idempotency: IdempotencyKey?, now: Date) async throws -> ScheduleStore.CreateOutcome {
        if let idempotency, let previous = try await schedules.previousOutcome(for: idempotency) { return previous }
        let (timing, repeats, firstDue, sendTime) = try body.validate(now: now)
        if repeats != nil, body.send.expiresAt != nil {
            throw ScheduledSendRequest.invalid("A repeating send cannot have expires_at: each occurrence would expire at the same instant.")
        }
        let draft = try await notifications.prepare(body.send, now: sendTime)
        do {
            try await notifications.notifications.checkAudience(of: draft)
        } catch let error as NotificationStoreError {
            throw NotificationsController.apiError(error)
        }
        let request = Array(try JSONEncoder().encode(body.send))
        let outcome = try await schedules.create(
            request: request,
            channelURL: draft.channelURL,
            templateKey: draft.templateKey,
            audience: draft.audience.name,
            timing: timing,
            repeats: repeats,
            nextAt: firstDue,
            idempotency: idempotency,
            // Every id the kept answer shows (it holds the request): an erasure of any of them removes it.
            userIDs: SendRequestUsers.ids(in: try JSONDecoder().decode(JSONValue.self, from: Data(request)))
        ) { stored in
            StoredResponse(status: HTTPResponse.Status.created.code, body: try ScheduledSendBody(stored).encoded())
        }
        if case .created = outcome { wake.signal() }
        return outcome
    }

    /// The route's answer to a scheduling: the new scheduled send (201), or the first answer again.
    static func response(_ outcome: ScheduleStore.CreateOutcome) throws -> Response {
        switch outcome {
        case .created(_, let response): return NotificationsController.jsonResponse(response, replayed: false)
        case .replayed(let response): return NotificationsController.jsonResponse(response, replayed: true)
        case .keyReused: throw NotificationsController.keyReused
        }
    }

    static let notFound = APIError(.notFound, code: "scheduled_send_not_found", message: "No scheduled send with this id.")

    static func id(_ context: HeraldRequestContext) throws -> Int64 {
        try id(try context.parameters.require("scheduled_send_id"))
    }

    static func id(_ text: String) throws -> Int64 {
        guard let id = CanonicalInteger.id(text) else {
            throw APIError(
                .badRequest,
                code: "invalid_scheduled_send_id",
                message: "scheduled_send_id must be a positive integer written in plain decimal."
            )
        }
        return id
    }
}
