import Foundation
import Postgres

/// An `Idempotency-Key` and a digest of the request it came with.
public struct IdempotencyKey: Sendable, Equatable {
    public var key: String
    /// Digest of the request, canonicalised by the caller: equal requests must give equal digests.
    public var requestHash: [UInt8]
    /// Whether the record is filed under the users the request names, so that erasing one of them
    /// removes it. Not for a scheduled part's key: its retry after such an erasure (the part sent, the
    /// worker gone before recording it) must still find the record, or the part is sent twice; what
    /// the record keeps, the notification keeps too.
    public var filedUnderUsers: Bool

    public init(key: String, requestHash: [UInt8], filedUnderUsers: Bool = true) {
        self.key = key
        self.requestHash = requestHash
        self.filedUnderUsers = filedUnderUsers
    }

    public static let maximumLength = 255
    /// How long a key is kept at least; the housekeeping removes keys older than this.
    public static let retention: Duration = .seconds(24 * 3600)
}

/// A response kept for replay: status code and body bytes, exactly as first sent.
public struct StoredResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

extension NotificationStore {
    /// What a send with this key must answer without doing anything: the first response (same request)
    /// or `keyReused` (different request); `nil` when the key is new.
    public func previousOutcome(for idempotency: IdempotencyKey) async throws -> SendOutcome? {
        try await client.withConnection { connection in
            try await Self.previousOutcome(for: idempotency, on: connection)
        }
    }

    /// Removes keys older than the retention; returns how many.
    @discardableResult
    public func deleteExpiredIdempotencyKeys(olderThan age: Duration = IdempotencyKey.retention) async throws -> Int {
        try await client.query(
            "DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => \(Double(age.components.seconds)))"
        ).affectedRows
    }

    /// Claims the key for this transaction, or returns the outcome recorded for it. The insert waits
    /// for a concurrent transaction that holds the same key and then sees its committed row.
    static func claim(_ idempotency: IdempotencyKey, on connection: PostgresConnection) async throws -> SendOutcome? {
        let claimed = try await connection.query(
            """
            INSERT INTO idempotency_keys (key, request_hash, status, response)
            VALUES (\(idempotency.key), \(PostgresBytes(idempotency.requestHash)), 0, \(PostgresBytes([])))
            ON CONFLICT (key) DO NOTHING RETURNING 1
            """
        )
        if !claimed.isEmpty { return nil }
        return try await previousOutcome(for: idempotency, on: connection) ?? .keyReused
    }

    /// Keeps the response to the request that claimed the key, in the claiming transaction, with the
    /// user ids the request named (an erasure removes the keys whose response names the user).
    static func keep(_ response: StoredResponse, for idempotency: IdempotencyKey, userIDs: [String], on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE idempotency_keys SET status = \(response.status), response = \(PostgresBytes(response.body)),
                user_ids = \(idempotency.filedUnderUsers ? userIDs : [])
            WHERE key = \(idempotency.key)
            """
        )
    }

    static func previousOutcome(for idempotency: IdempotencyKey, on connection: PostgresConnection) async throws -> SendOutcome? {
        guard
            let row = try await connection.query(
                "SELECT request_hash, status, response FROM idempotency_keys WHERE key = \(idempotency.key)"
            ).first
        else { return nil }
        let (hash, status, body) = try row.decode((PostgresBytes, Int, PostgresBytes).self)
        guard hash.bytes == idempotency.requestHash else { return .keyReused }
        return .replayed(StoredResponse(status: status, body: body.bytes))
    }
}
