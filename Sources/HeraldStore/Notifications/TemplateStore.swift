import Foundation
import HeraldCore
import Postgres

/// A template version as stored.
public struct StoredTemplate: Sendable, Equatable {
    public var template: Template
    public var version: Int
    public var createdAt: Date
}

/// Templates and their versions.
public struct TemplateStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Stores `template` as a new version when it differs from the latest one (`created` for the first
    /// version, `updated` for a later one); otherwise changes nothing (`unchanged`).
    public func put(_ template: Template) async throws -> (stored: StoredTemplate, outcome: PutOutcome) {
        try await client.withTransaction { connection in
            try await Self.put(template, on: connection)
        }
    }

    /// `put` inside a caller's transaction.
    public static func put(_ template: Template, on connection: PostgresConnection) async throws -> (stored: StoredTemplate, outcome: PutOutcome) {
        // Serialises writers of one key, including the first version, which has no row to lock yet.
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended('herald.template:' || \(template.key), 0))")
        let latest = try await connection.query(
            "SELECT definition, version, created_at FROM templates WHERE key = \(template.key) ORDER BY version DESC LIMIT 1"
        ).first.map(decode)
        if let latest, latest.template == template { return (latest, .unchanged) }
        let version = (latest?.version ?? 0) + 1
        let definition = try PostgresJSONB(utf8: Array(JSONEncoder().encode(template)))
        let rows = try await connection.query(
            """
            INSERT INTO templates (key, version, definition) VALUES (\(template.key), \(version), \(definition))
            RETURNING definition, version, created_at
            """
        )
        return (try decode(rows[0]), latest == nil ? .created : .updated)
    }

    /// The latest version, or the given one.
    public func get(_ key: String, version: Int? = nil) async throws -> StoredTemplate? {
        let rows: PostgresResult
        if let version {
            rows = try await client.query("SELECT definition, version, created_at FROM templates WHERE key = \(key) AND version = \(version)")
        } else {
            rows = try await client.query("SELECT definition, version, created_at FROM templates WHERE key = \(key) ORDER BY version DESC LIMIT 1")
        }
        return try rows.first.map(Self.decode)
    }

    /// Every version of the template, newest first.
    public func versions(_ key: String) async throws -> [StoredTemplate] {
        try await client.query("SELECT definition, version, created_at FROM templates WHERE key = \(key) ORDER BY version DESC").map(Self.decode)
    }

    /// The latest version of each template, in key order, `limit` at a time after `after`.
    public func list(after: String?, limit: Int) async throws -> [StoredTemplate] {
        try await client.query(
            """
            SELECT DISTINCT ON (key) definition, version, created_at FROM templates
            WHERE key > \(after ?? "") ORDER BY key, version DESC LIMIT \(limit)
            """
        ).map(Self.decode)
    }

    static func decode(_ row: PostgresRow) throws -> StoredTemplate {
        let (definition, version, createdAt) = try row.decode((PostgresJSONB, Int, Date).self)
        return StoredTemplate(template: try JSONDecoder().decode(Template.self, from: Data(definition.utf8)), version: version, createdAt: createdAt)
    }
}
