import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The body of `POST /v1/notifications`.
struct SendNotificationRequest: Codable, Sendable {
    var channelURL: String
    var templateKey: String
    var variables: [String: JSONValue]
    var userVariables: [String: [String: JSONValue]]
    var targets: [String]?
    var audience: String?
    var topic: String?
    /// Absent unless given, so that the digest of a request without it is what it was before
    /// `exclude` existed (idempotency keys kept across an upgrade still match).
    var exclude: [String]?
    var category: String?
    var tags: [String]
    var eventDeadline: String?
    var expiresAt: String?
    var push: PushOptions
    /// Replaces the channel's throttle for this send.
    var throttle: Throttle?
    /// Folds the send into each recipient's open digest with the same key.
    var batch: Batch?

    enum CodingKeys: String, CodingKey {
        case channelURL = "channel_url"
        case templateKey = "template_key"
        case variables
        case userVariables = "user_variables"
        case targets, audience, topic, exclude, category, tags
        case eventDeadline = "event_deadline"
        case expiresAt = "expires_at"
        case push, throttle, batch
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        channelURL = try container.decode(String.self, forKey: .channelURL)
        templateKey = try container.decode(String.self, forKey: .templateKey)
        variables = try container.decodeIfPresent([String: JSONValue].self, forKey: .variables) ?? [:]
        userVariables = try container.decodeIfPresent([String: [String: JSONValue]].self, forKey: .userVariables) ?? [:]
        targets = try container.decodeIfPresent([String].self, forKey: .targets)
        audience = try container.decodeIfPresent(String.self, forKey: .audience)
        topic = try container.decodeIfPresent(String.self, forKey: .topic)
        exclude = try container.decodeIfPresent([String].self, forKey: .exclude)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        eventDeadline = try container.decodeIfPresent(String.self, forKey: .eventDeadline)
        expiresAt = try container.decodeIfPresent(String.self, forKey: .expiresAt)
        push = try container.decodeIfPresent(PushOptions.self, forKey: .push) ?? PushOptions()
        throttle = try container.decodeIfPresent(Throttle.self, forKey: .throttle)
        batch = try container.decodeIfPresent(Batch.self, forKey: .batch)
    }

    static let maximumTargets = 10_000
    static let maximumTags = 20
    static let maximumTagLength = 128
    static let maximumCategoryLength = 64
    /// Variables per scope; templates declare far fewer, this only bounds the work of rejecting.
    static let maximumVariables = 100
    /// Variable values are scalars; this bounds how deep a wrong value may nest before it is rejected.
    static let maximumVariableDepth = 8

    /// The validated audience, deadline and expiry, or a 400 naming the first field at fault.
    func validate(now: Date = Date()) throws(APIError) -> (audience: Audience, eventDeadline: Date?, expiresAt: Date?) {
        func invalid(_ field: String, _ message: String) -> APIError {
            APIError(.badRequest, code: "invalid_notification", message: "\(field) \(message).")
        }
        if let problem = Channel.urlProblem(channelURL) { throw invalid("channel_url", problem) }
        if let problem = Template.keyProblem(templateKey) { throw invalid("template_key", problem) }
        let audience: Audience
        switch (targets, self.audience, topic) {
        case (let targets?, nil, nil):
            guard (1...Self.maximumTargets).contains(targets.count) else {
                throw invalid("targets", "must list 1–\(Self.maximumTargets) user ids")
            }
            if let index = targets.firstIndex(where: { UserID.problem(with: $0) != nil }) {
                throw invalid("targets[\(index)]", UserID.problem(with: targets[index])!)
            }
            var seen = Set<String>()
            audience = .targets(targets.filter { seen.insert($0).inserted })
        case (nil, "all", nil):
            audience = .all
        case (nil, let other?, nil):
            throw invalid("audience", "must be \"all\", not \"\(other.prefix(32))\"")
        case (nil, nil, let topic?):
            if let problem = TopicID.problem(with: topic) { throw invalid("topic", problem) }
            audience = .topic(topic)
        case (nil, nil, nil):
            throw invalid("targets", "or audience: \"all\" or topic is required")
        case (.some, .some, _):
            throw invalid("targets", "and audience cannot both be given")
        default:
            throw invalid("topic", "cannot be given with targets or audience")
        }
        if let exclude, !exclude.isEmpty {
            if case .targets = audience { throw invalid("exclude", "applies to audience: \"all\" and topic sends; leave the users out of targets") }
            guard exclude.count <= Self.maximumTargets else { throw invalid("exclude", "may list at most \(Self.maximumTargets) user ids") }
            if let index = exclude.firstIndex(where: { UserID.problem(with: $0) != nil }) {
                throw invalid("exclude[\(index)]", UserID.problem(with: exclude[index])!)
            }
        }
        try Self.checkVariables(variables, field: "variables")
        guard userVariables.count <= Self.maximumTargets else {
            throw invalid("user_variables", "may name at most \(Self.maximumTargets) users")
        }
        for userID in userVariables.keys.sorted() {
            if let problem = UserID.problem(with: userID) { throw invalid("user_variables", "has a key that is not a user id: \(problem)") }
            if case .targets(let ids) = audience, !ids.contains(userID) {
                throw invalid("user_variables.\(userID)", "names a user who is not in targets")
            }
            try Self.checkVariables(userVariables[userID]!, field: "user_variables.\(userID)")
        }
        if let category, category.isEmpty || category.count > Self.maximumCategoryLength {
            throw invalid("category", "must be 1–\(Self.maximumCategoryLength) characters")
        }
        guard tags.count <= Self.maximumTags else { throw invalid("tags", "at most \(Self.maximumTags) tags") }
        if let index = tags.firstIndex(where: { $0.isEmpty || $0.count > Self.maximumTagLength }) {
            throw invalid("tags[\(index)]", "must be 1–\(Self.maximumTagLength) characters")
        }
        var deadline: Date?
        if let eventDeadline {
            guard let parsed = RFC3339.date(from: eventDeadline) else {
                throw invalid("event_deadline", "must be an RFC 3339 date-time")
            }
            deadline = parsed
        }
        var expiry: Date?
        if let expiresAt {
            guard let parsed = RFC3339.date(from: expiresAt) else { throw invalid("expires_at", "must be an RFC 3339 date-time") }
            guard parsed > now else { throw invalid("expires_at", "must be in the future") }
            expiry = parsed
        }
        if let (field, message) = push.problem() { throw invalid("push.\(field)", message) }
        if let (field, message) = throttle?.problem() { throw invalid("throttle.\(field)", message) }
        if let batch {
            if let (field, message) = batch.problem() { throw invalid("batch.\(field)", message) }
            // A digest is rendered once for every user whose batch holds the same sends.
            if !userVariables.isEmpty { throw invalid("batch", "cannot be given with user_variables: a digest renders the same for each user") }
        }
        return (audience, deadline, expiry)
    }

    static func checkVariables(_ values: [String: JSONValue], field: String) throws(APIError) {
        guard values.count <= maximumVariables else {
            throw APIError(.badRequest, code: "invalid_notification", message: "\(field) may have at most \(maximumVariables) entries.")
        }
        if let name = values.keys.sorted().first(where: { values[$0]!.depth > maximumVariableDepth }) {
            throw APIError(.badRequest, code: "invalid_notification", message: "\(field).\(name) nests too deeply.")
        }
    }

    /// A digest that is equal for equal requests however their JSON was formatted: the decoded request
    /// re-encoded with sorted keys.
    func canonicalDigest() throws -> [UInt8] {
        SHA256.digest(try CanonicalJSON.encoder.encode(self))
    }
}

/// The body of `PATCH /v1/notifications/{notification_id}`: new variables, rendered again with the
/// template version the notification was made with.
struct UpdateNotificationRequest: Decodable, Sendable {
    var variables: [String: JSONValue]
    var userVariables: [String: [String: JSONValue]]

    enum CodingKeys: String, CodingKey {
        case variables
        case userVariables = "user_variables"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        variables = try container.decodeIfPresent([String: JSONValue].self, forKey: .variables) ?? [:]
        userVariables = try container.decodeIfPresent([String: [String: JSONValue]].self, forKey: .userVariables) ?? [:]
    }

    func validate() throws(APIError) {
        try SendNotificationRequest.checkVariables(variables, field: "variables")
        guard userVariables.count <= SendNotificationRequest.maximumTargets else {
            throw APIError(
                .badRequest,
                code: "invalid_notification",
                message: "user_variables may name at most \(SendNotificationRequest.maximumTargets) users."
            )
        }
        for userID in userVariables.keys.sorted() {
            if let problem = UserID.problem(with: userID) {
                throw APIError(.badRequest, code: "invalid_notification", message: "user_variables has a key that is not a user id: \(problem).")
            }
            try SendNotificationRequest.checkVariables(userVariables[userID]!, field: "user_variables.\(userID)")
        }
    }
}
