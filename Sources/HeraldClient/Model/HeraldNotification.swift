public import Foundation

/// One notification as the user sees it in a collection.
public struct HeraldNotification: Sendable, Hashable, Identifiable, Codable {
    /// What the user has done with it.
    public enum Status: String, Sendable, Hashable, Codable {
        case sent = "SENT"
        case delivered = "DELIVERED"
        case read = "READ"
    }

    /// The notification's id (decimal): ids grow with time, so a higher id is a newer notification.
    public var id: String
    public var templateKey: String
    public var templateVersion: Int
    /// What the template rendered for this user.
    public var data: HeraldJSON
    public var category: String
    public var tags: [String]
    public var eventDeadline: Date?
    public var status: Status
    /// The user archived it (an archived notification is read): it shows in collections of status
    /// `.archived` and `.all` only.
    public var archived: Bool
    /// The buttons it offers, and the ids of those the user pressed (on any device).
    public var actions: [HeraldAction]
    public var actionsDone: [String]
    public var createdAt: Date
    public var updatedAt: Date
    /// This version's place in the user's change stream: of two versions the higher one wins.
    public var position: Int64

    public init(
        id: String,
        templateKey: String,
        templateVersion: Int,
        data: HeraldJSON,
        category: String,
        tags: [String],
        eventDeadline: Date?,
        status: Status,
        createdAt: Date,
        updatedAt: Date,
        position: Int64,
        archived: Bool = false,
        actions: [HeraldAction] = [],
        actionsDone: [String] = []
    ) {
        self.id = id
        self.templateKey = templateKey
        self.templateVersion = templateVersion
        self.data = data
        self.category = category
        self.tags = tags
        self.eventDeadline = eventDeadline
        self.status = status
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.position = position
        self.archived = archived
        self.actions = actions
        self.actionsDone = actionsDone
    }

    enum CodingKeys: String, CodingKey {
        case id, templateKey, templateVersion, data, category, tags, eventDeadline, status, archived, actions, actionsDone, createdAt, updatedAt,
            position
    }

    /// Decodes a notification as the cache keeps it; one kept before archiving existed is not archived.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        templateKey = try container.decode(String.self, forKey: .templateKey)
        templateVersion = try container.decode(Int.self, forKey: .templateVersion)
        data = try container.decode(HeraldJSON.self, forKey: .data)
        category = try container.decode(String.self, forKey: .category)
        tags = try container.decode([String].self, forKey: .tags)
        eventDeadline = try container.decodeIfPresent(Date.self, forKey: .eventDeadline)
        status = try container.decode(Status.self, forKey: .status)
        archived = try container.decodeIfPresent(Bool.self, forKey: .archived) ?? false
        actions = try container.decodeIfPresent([HeraldAction].self, forKey: .actions) ?? []
        actionsDone = try container.decodeIfPresent([String].self, forKey: .actionsDone) ?? []
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
        position = try container.decode(Int64.self, forKey: .position)
    }

    /// The id as a number, for ordering (ids are decimal strings on the wire).
    var number: Int64 { Int64(id) ?? 0 }
}

extension HeraldNotification {
    /// The library's value of a wire notification; `HeraldClientError.decoding` when its data is not
    /// JSON the library can hold.
    init(converting wire: Components.Schemas.CollectionNotification) throws {
        let data: HeraldJSON
        do {
            data = try HeraldJSON.converting(wire.data)
        } catch {
            throw HeraldClientError.decoding("notification \(wire.id): \(error)")
        }
        self.init(
            id: wire.id,
            templateKey: wire.templateKey,
            templateVersion: wire.templateVersion,
            data: data,
            category: wire.category,
            tags: wire.tags,
            eventDeadline: wire.eventDeadline?.onMillisecondGrid,
            status: Status(rawValue: wire.status.rawValue) ?? .sent,
            createdAt: Date(milliseconds: wire.createdAtMs),
            updatedAt: Date(milliseconds: wire.updatedAtMs),
            position: Int64(wire.position) ?? 0,
            archived: wire.archived,
            actions: wire.actions.map { HeraldAction(id: $0.id, label: $0.label, url: $0.url.flatMap(URL.init(string:))) },
            actionsDone: wire.actionsDone
        )
    }
}

extension HeraldJSON {
    /// The same value re-encoded through `Codable`, from any other JSON-shaped `Codable` value (the
    /// generated client's free-form objects).
    static func converting(_ value: some Encodable) throws -> HeraldJSON {
        try JSONDecoder().decode(HeraldJSON.self, from: JSONEncoder().encode(value))
    }
}
