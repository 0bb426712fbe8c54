import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// Admin routes for webhooks (`/v1/webhooks`): the endpoints the app's backend gives, and the events
/// that could not be delivered. A webhook's signing secret is sealed before it is stored and never
/// returned.
struct WebhooksController: Sendable {
    let webhooks: WebhookStore?

    static let maximumNameLength = 64
    static let secretLengths = 24...256
    static let batchSizes = 1...500

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/webhooks/{name}", access: .admin) { request, context in
            try await put(request, context: context)
        }
        routes.add(.get, "/v1/webhooks", access: .admin) { _, _ in
            WebhookListBody(webhooks: try await store().list().map(WebhookBody.init))
        }
        routes.add(.get, "/v1/webhooks/{name}", access: .admin) { _, context in
            guard let webhook = try await store().get(try Self.name(context)) else { throw Self.notFound }
            return WebhookBody(webhook)
        }
        routes.add(.delete, "/v1/webhooks/{name}", access: .admin) { _, context in
            guard try await store().delete(try Self.name(context)) else { throw Self.notFound }
            return Response(status: .noContent)
        }
        routes.add(.get, "/v1/webhooks/{name}/failures", access: .admin) { request, context in
            let store = try store()
            let name = try Self.name(context)
            guard try await store.get(name) != nil else { throw Self.notFound }
            let page = try PageRequest(request, maximum: 100, default: 50)
            var after: Int64?
            if let text = request.uri.queryParameters["after"] {
                guard let value = CanonicalInteger.id(text) else {
                    throw APIError(.badRequest, code: "invalid_after", message: "after must be an event id (the next_after of a page).")
                }
                after = value
            }
            let failures = try await store.failures(name, after: after, limit: page.limit)
            return FailureListBody(
                failures: failures,
                nextAfter: failures.count == page.limit ? failures.last.map { String($0.eventID) } : nil
            )
        }
        routes.add(.post, "/v1/webhooks/{name}/failures/resend", access: .admin) { request, context in
            let store = try store()
            let name = try Self.name(context)
            guard try await store.get(name) != nil else { throw Self.notFound }
            let body = try await RequestBody.decode(ResendRequest.self, from: request, context: context)
            var ids: [Int64]?
            if let given = body?.eventIDs {
                let parsed = given.compactMap(CanonicalInteger.id)
                guard given.count <= 1000, parsed.count == given.count else {
                    throw APIError(.badRequest, code: "invalid_event_ids", message: "event_ids must list at most 1000 event ids.")
                }
                ids = parsed
            }
            return ResentBody(resent: try await store.resend(name, eventIDs: ids))
        }
    }

    static let notFound = APIError(.notFound, code: "webhook_not_found", message: "No webhook with this name.")

    private func store() throws -> WebhookStore {
        guard let webhooks else {
            throw APIError.secretsUnavailable("webhook secrets cannot be stored")
        }
        return webhooks
    }

    /// The body of `PUT`.
    struct Definition: Decodable {
        var url: String
        var events: [String]
        var secret: String?
        var batchSize: Int?

        enum CodingKeys: String, CodingKey {
            case url, events, secret
            case batchSize = "batch_size"
        }
    }

    struct ResendRequest: Decodable {
        var eventIDs: [String]?

        enum CodingKeys: String, CodingKey {
            case eventIDs = "event_ids"
        }
    }

    func put(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<WebhookBody> {
        let store = try store()
        let name = try Self.name(context)
        guard let definition = try await RequestBody.decode(Definition.self, from: request, context: context) else {
            throw Self.invalid("The body must give url and events (and secret, for a new webhook).")
        }
        guard WebURL.isHTTP(definition.url) else { throw Self.invalid("url must be an http(s) URL of at most \(WebURL.maximumLength) characters.") }
        var events: [WebhookEventType] = []
        for event in definition.events {
            guard let type = WebhookEventType(rawValue: event) else {
                let known = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
                throw Self.invalid("events: '\(event.prefix(64))' is not an event type; they are \(known).")
            }
            if !events.contains(type) { events.append(type) }
        }
        guard !events.isEmpty else { throw Self.invalid("events must name at least one event type.") }
        if let secret = definition.secret, !Self.secretLengths.contains(secret.utf8.count) {
            throw Self.invalid("secret must be \(Self.secretLengths.lowerBound)–\(Self.secretLengths.upperBound) bytes.")
        }
        let batchSize = definition.batchSize ?? 50
        guard Self.batchSizes.contains(batchSize) else {
            throw Self.invalid("batch_size must be \(Self.batchSizes.lowerBound)–\(Self.batchSizes.upperBound).")
        }
        guard
            let (webhook, created) = try await store.put(
                name: name,
                url: definition.url,
                events: events,
                secret: definition.secret,
                batchSize: batchSize
            )
        else {
            throw Self.invalid(
                "A new webhook needs a secret (\(Self.secretLengths.lowerBound)–\(Self.secretLengths.upperBound) bytes) to sign its requests."
            )
        }
        return EditedResponse(status: created ? .created : .ok, response: WebhookBody(webhook))
    }

    static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_webhook", message: message)
    }

    static func name(_ context: HeraldRequestContext) throws -> String {
        let name = try context.parameters.require("name")
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
        }
        guard (1...maximumNameLength).contains(name.count), allowed else {
            throw APIError(.badRequest, code: "invalid_name", message: "A webhook name is 1–\(maximumNameLength) of A–Z a–z 0–9 . _ -.")
        }
        return name
    }

    // MARK: - Bodies

    struct WebhookBody: ResponseEncodable {
        var name: String
        var url: String
        var events: [String]
        var batchSize: Int
        /// `active`, or `paused` after failing too long (a `PUT` resumes it).
        var status: String
        var failingSince: String?
        var pausedAt: String?
        var createdAt: String
        var updatedAt: String

        init(_ webhook: Webhook) {
            name = webhook.name
            url = webhook.url
            events = webhook.events.map(\.rawValue)
            batchSize = webhook.batchSize
            status = webhook.pausedAt == nil ? "active" : "paused"
            failingSince = webhook.failingSince.map(RFC3339.string)
            pausedAt = webhook.pausedAt.map(RFC3339.string)
            createdAt = RFC3339.string(from: webhook.createdAt)
            updatedAt = RFC3339.string(from: webhook.updatedAt)
        }

        enum CodingKeys: String, CodingKey {
            case name, url, events, status
            case batchSize = "batch_size"
            case failingSince = "failing_since"
            case pausedAt = "paused_at"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(url, forKey: .url)
            try container.encode(events, forKey: .events)
            try container.encode(batchSize, forKey: .batchSize)
            try container.encode(status, forKey: .status)
            try container.encode(failingSince, forKey: .failingSince)
            try container.encode(pausedAt, forKey: .pausedAt)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(updatedAt, forKey: .updatedAt)
        }
    }

    struct WebhookListBody: ResponseEncodable {
        var webhooks: [WebhookBody]
    }

    struct ResentBody: ResponseEncodable {
        var resent: Int
    }

    /// The dead letters, each with the event exactly as it would be posted.
    struct FailureListBody: JSONWritable {
        var failures: [WebhookFailure]
        var nextAfter: String?

        func write(to writer: inout JSONWriter) {
            writer.beginObject()
            writer.key("failures")
            writer.beginArray()
            for failure in failures {
                writer.beginObject()
                writer.key("event")
                writer.raw(Array(failure.event.utf8))
                writer.key("attempts")
                writer.integer(failure.attempts)
                writer.key("last_status")
                if let status = failure.lastStatus { writer.integer(status) } else { writer.null() }
                writer.key("last_error")
                writer.string(failure.lastError)
                writer.key("failed_at")
                writer.string(RFC3339.string(from: failure.failedAt))
                writer.endObject()
            }
            writer.endArray()
            writer.key("next_after")
            writer.string(nextAfter)
            writer.endObject()
        }
    }
}
