import Foundation
import HeraldCore
import Postgres

/// An APNs credential as listed: everything but its secrets.
public struct APNsCredentialInfo: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case token
        case certificate
    }

    public var name: String
    public var kind: Kind
    public var environment: String
    public var topic: String
    public var keyID: String?
    public var teamID: String?
    public var certificateExpiresAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    /// False when the stored secret does not open with this server's secret key (`HERALD_SECRET_KEY`
    /// changed, or the row was altered): the credential cannot push until it is uploaded again.
    public var isReadable = true

    public init(
        name: String,
        kind: Kind,
        environment: String,
        topic: String,
        keyID: String?,
        teamID: String?,
        certificateExpiresAt: Date?,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.name = name
        self.kind = kind
        self.environment = environment
        self.topic = topic
        self.keyID = keyID
        self.teamID = teamID
        self.certificateExpiresAt = certificateExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A credential with its secrets opened: the `.p8` PEM bytes or the `.p12` bytes, and the `.p12` password.
public struct APNsCredentialSecrets: Sendable {
    public var info: APNsCredentialInfo
    public var secret: [UInt8]
    public var password: String?
}

/// APNs credentials, their secrets sealed with AES-256-GCM (`SecretBox`) before they reach the database.
public struct APNsCredentialStore: Sendable {
    public let client: PostgresClient
    private let box: SecretBox

    public init(client: PostgresClient, box: SecretBox) {
        self.client = client
        self.box = box
    }

    /// Creates or replaces the credential `info.name`. Returns it as stored, and whether it is new.
    @discardableResult
    public func put(_ info: APNsCredentialInfo, secret: [UInt8], password: String?) async throws -> (info: APNsCredentialInfo, created: Bool) {
        // The name is sealed in with the secret: a sealed value copied to another row does not open.
        let sealed = PostgresBytes(box.seal(secret, context: "apns:\(info.name):secret"))
        let sealedPassword = password.map { PostgresBytes(box.seal(Array($0.utf8), context: "apns:\(info.name):password")) }
        let row = try await client.query(
            """
            INSERT INTO apns_credentials (name, kind, environment, topic, key_id, team_id, secret, password, certificate_expires_at)
            VALUES (\(info.name), \(info.kind.rawValue), \(info.environment), \(info.topic), \(info.keyID), \(info.teamID),
                \(sealed), \(sealedPassword), \(info.certificateExpiresAt))
            ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind, environment = EXCLUDED.environment, topic = EXCLUDED.topic,
                key_id = EXCLUDED.key_id, team_id = EXCLUDED.team_id, secret = EXCLUDED.secret, password = EXCLUDED.password,
                certificate_expires_at = EXCLUDED.certificate_expires_at, updated_at = now()
            RETURNING \(Self.columns), xmax = 0
            """
        ).first!
        // xmax is 0 for a row this statement inserted, the updater's id for one it replaced.
        return (try Self.decode(row), try row.decode(column: 9, as: Bool.self))
    }

    /// Every credential, each marked readable or not (its secrets are opened to tell, then dropped).
    public func list() async throws -> [APNsCredentialInfo] {
        try await client.query("SELECT \(Self.columns), secret, password FROM apns_credentials ORDER BY name").map { row in
            var info = try Self.decode(row)
            info.isReadable = (try? open(row, info)) != nil
            return info
        }
    }

    public func delete(_ name: String) async throws -> Bool {
        try await client.query("DELETE FROM apns_credentials WHERE name = \(name)").affectedRows > 0
    }

    /// A value that changes whenever a credential is added, replaced or deleted: the number stored and
    /// the newest change, so that a caller polling it reloads the credentials only after a change.
    public func fingerprint() async throws -> String {
        let rows = try await client.query("SELECT count(*), max(updated_at) FROM apns_credentials")
        // An aggregate without GROUP BY always answers one row.
        let (count, newest) = try rows[0].decode((Int64, Date?).self)
        return "\(count)@\(newest?.timeIntervalSince1970 ?? 0)"
    }

    /// Every credential with its secrets opened, for the push transport; those whose secrets do not
    /// open are set apart (with `isReadable` false) rather than failing the rest.
    public func allWithSecrets() async throws -> (usable: [APNsCredentialSecrets], unreadable: [APNsCredentialInfo]) {
        let rows = try await client.query("SELECT \(Self.columns), secret, password FROM apns_credentials ORDER BY name")
        var usable: [APNsCredentialSecrets] = []
        var unreadable: [APNsCredentialInfo] = []
        for row in rows {
            var info = try Self.decode(row)
            if let (secret, password) = try? open(row, info) {
                usable.append(APNsCredentialSecrets(info: info, secret: secret, password: password))
            } else {
                info.isReadable = false
                unreadable.append(info)
            }
        }
        return (usable, unreadable)
    }

    /// Opens the secret and password of a row read with `columns, secret, password`. The name is
    /// sealed in with them, so a value copied to another credential's row does not open.
    private func open(_ row: PostgresRow, _ info: APNsCredentialInfo) throws -> (secret: [UInt8], password: String?) {
        let secret = try row.decode(column: 9, as: PostgresBytes.self)
        let password = try row.decode(column: 10, as: PostgresBytes?.self)
        return (
            try box.open(secret.bytes, context: "apns:\(info.name):secret"),
            try password.map { String(decoding: try box.open($0.bytes, context: "apns:\(info.name):password"), as: UTF8.self) }
        )
    }

    static let columns: PostgresQuery = "name, kind, environment, topic, key_id, team_id, certificate_expires_at, created_at, updated_at"

    static func decode(_ row: PostgresRow) throws -> APNsCredentialInfo {
        let (name, kind, environment, topic, keyID, teamID, expires, created, updated) = try row.decode(
            (String, String, String, String, String?, String?, Date?, Date, Date).self
        )
        return APNsCredentialInfo(
            name: name,
            kind: APNsCredentialInfo.Kind(rawValue: kind) ?? .token,
            environment: environment,
            topic: topic,
            keyID: keyID,
            teamID: teamID,
            certificateExpiresAt: expires,
            createdAt: created,
            updatedAt: updated
        )
    }
}
