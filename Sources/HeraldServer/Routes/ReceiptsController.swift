import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// `POST /v1/me/delivered` (delivery receipts) and `POST /v1/me/events` (views and clicks).
struct ReceiptsController {
    let collections: CollectionStore

    /// Ids one receipt may name (a push names one; a client catching up may batch).
    static let maximumReceiptIDs = 100
    /// Ids one event call may name (Sendbird's limit).
    static let maximumEventIDs = 30

    func register(in routes: RouteRegistry) {
        routes.add(.post, "/v1/me/delivered", access: .user) { request, context in
            let user = context.user!
            let body = try await RequestBody.decode(DeliveredRequest.self, from: request, context: context)
            let ids = try Self.receiptIDs(body)
            let changed = try await Self.refusingStrangers { try await collections.markDelivered(userKey: user.key, ids: ids) }
            return DeliveredBody(updated: changed.flatMap(\.ids).sorted().map { String($0) })
        }
        routes.add(.post, "/v1/me/events", access: .user) { request, context -> Response in
            let user = context.user!
            guard let body = try await RequestBody.decode(EventsRequest.self, from: request, context: context) else {
                throw APIError(.badRequest, code: "invalid_event", message: "The body must name type (viewed or clicked) and notification_ids.")
            }
            guard let kind = NotificationEventKind(name: body.type) else {
                throw APIError(.badRequest, code: "invalid_event", message: "type must be viewed or clicked.")
            }
            guard (1...Self.maximumEventIDs).contains(body.notificationIDs.count) else {
                throw APIError(
                    .badRequest,
                    code: "invalid_notification_ids",
                    message: "notification_ids must name 1 to \(Self.maximumEventIDs) notifications."
                )
            }
            let ids = try body.notificationIDs.map(Self.parseID)
            try await Self.refusingStrangers { try await collections.logEvent(kind, userKey: user.key, ids: ids) }
            return Response(status: .noContent)
        }
        routes.add(.post, "/v1/me/notifications/{notification_id}/actions/{action_id}", access: .user) { _, context in
            let user = context.user!
            let id = try Self.parseID(try context.parameters.require("notification_id"))
            guard let actionID = try context.parameters.require("action_id").removingPercentEncoding, Template.isActionID(actionID) else {
                throw APIError(.badRequest, code: "invalid_action_id", message: "The action id must be 1–64 characters from A–Z, a–z, 0–9, _ and -.")
            }
            do {
                let pressed = try await collections.pressAction(userKey: user.key, notificationID: id, actionID: actionID)
                return StateBody(pressed.state, position: pressed.position)
            } catch ActionError.notificationNotFound {
                throw APIError(.notFound, code: "notification_not_found", message: "You have no notification with this id.")
            } catch ActionError.actionNotFound {
                throw APIError(.notFound, code: "action_not_found", message: "The notification offers no action '\(actionID)'.")
            }
        }
    }

    /// The ids a receipt names: `notification_ids`, or the `herald` object of the push the device got
    /// (`notification_id` of a refresh push, `message_id` of an alert push, or `notification_ids`).
    static func receiptIDs(_ body: DeliveredRequest?) throws -> [Int64] {
        var texts: [String] = body?.notificationIDs ?? []
        if case .object(let herald)? = body?.herald {
            for key in ["notification_id", "message_id"] {
                switch herald[key] {
                case .string(let text)?: texts.append(text)
                case .number(let number)? where number >= 1 && number < 9.0e15 && number.rounded() == number: texts.append(String(Int64(number)))
                case nil, .null?: break
                default: throw APIError(.badRequest, code: "invalid_receipt", message: "herald.\(key) must be a notification id.")
                }
            }
            if case .array(let values)? = herald["notification_ids"] {
                for value in values {
                    guard case .string(let text) = value else {
                        throw APIError(.badRequest, code: "invalid_receipt", message: "herald.notification_ids must be strings.")
                    }
                    texts.append(text)
                }
            }
        } else if let herald = body?.herald, herald != .null {
            throw APIError(.badRequest, code: "invalid_receipt", message: "herald must be the object of the received push.")
        }
        guard !texts.isEmpty else {
            throw APIError(
                .badRequest,
                code: "invalid_receipt",
                message: "Name the delivered notifications: notification_ids, or the push's herald object (with notification_id or message_id)."
            )
        }
        guard texts.count <= maximumReceiptIDs else {
            throw APIError(.badRequest, code: "invalid_notification_ids", message: "A receipt names at most \(maximumReceiptIDs) notifications.")
        }
        return try texts.map(parseID)
    }

    static func parseID(_ text: String) throws -> Int64 {
        guard let id = CanonicalInteger.id(text) else {
            throw APIError(.badRequest, code: "invalid_notification_id", message: "Notification ids are positive integers as strings.")
        }
        return id
    }

    /// Runs `body`; ids that are not the caller's are a 404 naming them (whether they exist for
    /// someone else is not told).
    static func refusingStrangers<R>(_ body: () async throws -> R) async throws -> R {
        do {
            return try await body()
        } catch let error as NotRecipientError {
            let listed = error.ids.prefix(10).map { String($0) }.joined(separator: ", ")
            throw APIError(.notFound, code: "notification_not_found", message: "You have no notification with id \(listed); nothing was recorded.")
        }
    }

    struct DeliveredRequest: Decodable {
        var herald: JSONValue?
        var notificationIDs: [String]?

        enum CodingKeys: String, CodingKey {
            case herald
            case notificationIDs = "notification_ids"
        }
    }

    struct EventsRequest: Decodable {
        var type: String
        var notificationIDs: [String]

        enum CodingKeys: String, CodingKey {
            case type
            case notificationIDs = "notification_ids"
        }
    }

    struct DeliveredBody: ResponseEncodable {
        /// Ids that became `DELIVERED` now (already delivered or read ones are not listed).
        var updated: [String]
    }
}
